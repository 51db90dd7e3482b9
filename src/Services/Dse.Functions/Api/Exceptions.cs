namespace Dse.Functions;

/// <summary>
/// A transaction was aborted: nothing it wrote was applied anywhere. Thrown to the client that submitted it, and at
/// an <c>await</c> of a call that failed inside a transaction (catching it there does not save the transaction).
/// </summary>
public sealed class EntityTransactionAbortedException : Exception
{
    /// <summary>Creates the exception from the abort's description.</summary>
    /// <param name="abort">The first exception of the transaction, in the call graph's order.</param>
    public EntityTransactionAbortedException(EntityAbort abort)
        : base($"Transaction aborted by {abort.ExceptionType} in {abort.Entity}({abort.Key}): {abort.Message}") => Abort = abort;

    /// <summary>The exception that aborted the transaction.</summary>
    public EntityAbort Abort { get; }

    /// <summary>The full name of the exception type that aborted the transaction.</summary>
    public string ExceptionType => Abort.ExceptionType;

    /// <summary>The message of the exception that aborted the transaction.</summary>
    public string AbortMessage => Abort.Message;

    /// <summary>The entity type whose method threw.</summary>
    public string Entity => Abort.Entity;

    /// <summary>The key of the entity whose method threw, as text.</summary>
    public string Key => Abort.Key;
}

/// <summary>Why a transaction aborted: the exception's type and message, and the entity that threw it.</summary>
/// <param name="ExceptionType">The full name of the exception's type.</param>
/// <param name="Message">The exception's message.</param>
/// <param name="Entity">The entity type whose method threw.</param>
/// <param name="Key">The entity's key, as text.</param>
public sealed record EntityAbort(string ExceptionType, string Message, string Entity, string Key);

/// <summary>
/// Two calls of one transaction that were not ordered by an <c>await</c> touched one entity and at least one of them
/// wrote its state: the result would depend on timing, so the transaction aborts, the same way on every run.
/// </summary>
/// <param name="message">What was touched, by which calls.</param>
public sealed class ConcurrentEntityAccessException(string message) : Exception(message);

/// <summary>
/// The call graph of a transaction is too deep or too wide to track its completion exactly (the credit of a call
/// cannot be split further), or deeper than <see cref="EntityRuntimeOptions.MaxCallDepth"/>.
/// </summary>
/// <param name="message">Which limit, at which call.</param>
public sealed class CallGraphLimitException(string message) : Exception(message);

/// <summary>A call names an entity type, an interface or a method that the runtime does not have.</summary>
/// <param name="message">What is unknown.</param>
public sealed class UnknownEntityException(string message) : Exception(message);

/// <summary>The arguments or the key of a call do not deserialize into the method's parameter types.</summary>
/// <param name="message">Which call, and why.</param>
/// <param name="inner">The serializer's exception.</param>
public sealed class EntityArgumentException(string message, Exception? inner = null) : Exception(message, inner);
