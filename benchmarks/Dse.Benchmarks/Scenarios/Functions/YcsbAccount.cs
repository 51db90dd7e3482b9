using Dse.Functions;
using MemoryPack;

namespace Dse.Benchmarks.Scenarios.Functions;

/// <summary>A YCSB-T account's state.</summary>
/// <param name="Balance">The balance.</param>
[MemoryPackable]
public sealed partial record YcsbBalance(long Balance);

/// <summary>A debit that would take a balance below zero.</summary>
/// <param name="account">The account.</param>
/// <param name="balance">Its balance.</param>
/// <param name="amount">The amount asked for.</param>
public sealed class InsufficientBalanceException(int account, long balance, long amount)
    : Exception($"account {account} holds {balance}, cannot pay {amount}");

/// <summary>YCSB-T's account (Styx's benchmark): a transfer debits here and credits the creditor, one transaction.</summary>
public interface IYcsbAccount : IEntity<int>
{
    /// <summary>Debits <paramref name="amount"/> here (aborting when short) and credits it to <paramref name="creditor"/>.</summary>
    /// <param name="creditor">The account credited.</param>
    /// <param name="amount">The amount.</param>
    /// <returns>This account's balance after the debit.</returns>
    Task<long> Transfer(int creditor, long amount);

    /// <summary>Credits <paramref name="amount"/>, after the caller's body returns.</summary>
    /// <param name="amount">The amount.</param>
    /// <returns>A completed task.</returns>
    [OneWay]
    Task Credit(long amount);

    /// <summary>Sets the balance.</summary>
    /// <param name="balance">The new balance.</param>
    /// <returns>Completes when set.</returns>
    Task Open(long balance);

    /// <summary>The balance.</summary>
    /// <returns>The balance.</returns>
    Task<long> Balance();
}

/// <summary>The YCSB-T account entity.</summary>
public sealed class YcsbAccount : Entity<int, YcsbBalance>, IYcsbAccount
{
    /// <inheritdoc />
    protected override YcsbBalance Initial => new(0);

    /// <inheritdoc />
    public async Task<long> Transfer(int creditor, long amount)
    {
        long balance = State.Balance;
        if (balance < amount)
        {
            throw new InsufficientBalanceException(Key, balance, amount);
        }

        State = new YcsbBalance(balance - amount);
        await Entities.Get<IYcsbAccount>(creditor).Credit(amount);
        return balance - amount;
    }

    /// <inheritdoc />
    public Task Credit(long amount)
    {
        State = new YcsbBalance(State.Balance + amount);
        return Task.CompletedTask;
    }

    /// <inheritdoc />
    public Task Open(long balance)
    {
        State = new YcsbBalance(balance);
        return Task.CompletedTask;
    }

    /// <inheritdoc />
    public Task<long> Balance() => Task.FromResult(State.Balance);
}
