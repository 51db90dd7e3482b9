namespace Dse.Functions.Tests;

/// <summary>The failure of <see cref="IRegister.WriteThenFail"/>.</summary>
/// <param name="key">The register.</param>
public sealed class RegisterFailedException(string key) : Exception($"register {key} failed after its write");

/// <summary>A number with a plain read, a plain write, and a write followed by an exception (a logic abort that wrote).</summary>
public interface IRegister : IEntity<string>
{
    Task<long> Read();

    Task Write(long value);

    Task WriteThenFail(long value);
}

/// <summary>A register: its state is one number, 0 until written.</summary>
public sealed class RegisterEntity : Entity<string, long>, IRegister
{
    public Task<long> Read() => Task.FromResult(State);

    public Task Write(long value)
    {
        State = value;
        return Task.CompletedTask;
    }

    public Task WriteThenFail(long value)
    {
        State = value;
        throw new RegisterFailedException(Key);
    }
}
