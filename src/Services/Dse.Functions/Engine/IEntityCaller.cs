namespace Dse.Functions.Engine;

/// <summary>Who makes the calls of a proxy: an invocation (a call inside a transaction) or a client (a new transaction).</summary>
internal interface IEntityCaller
{
    Task<TResult> CallAsync<TArgs, TResult>(EntityAddress target, string method, TArgs args, bool oneWay);
}
