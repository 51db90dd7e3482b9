using MemoryPack;

namespace Dse.Functions.Tests;

/// <summary>Requests and calls the runtime must refuse: each a clear, deterministic refusal that applies nothing.</summary>
public class EntityBadInputTests
{
    private static void Entities(EntityRegistration e) => e.Add<AccountEntity>().Add<Probe>().Add<Sink>().Add<Fragile>().Add<Bank>();

    [Fact]
    public async Task UnknownEntityType_IsRejectedBeforeSequencing()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        TransactionOutcome outcome = await runtime.Client.SubmitAsync("Nope", Key("a"), "Balance", ReadOnlyMemory<byte>.Empty);
        Assert.Equal(TransactionPhase.Rejected, outcome.Phase);
        Assert.Equal(-1, outcome.Tid);
        Assert.Equal(typeof(UnknownEntityException).FullName, outcome.Abort!.ExceptionType);
        Assert.Equal("No entity type named Nope is registered.", outcome.Abort.Message);
    }

    [Fact]
    public async Task KeyThatDoesNotDeserialize_IsRejected()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        TransactionOutcome outcome = await runtime.Client.SubmitAsync("AccountEntity", new byte[] { 0xFF, 0xFF, 0xFF, 0x7F, 1 }, "Balance", ReadOnlyMemory<byte>.Empty);
        Assert.Equal(TransactionPhase.Rejected, outcome.Phase);
        Assert.Equal(typeof(EntityArgumentException).FullName, outcome.Abort!.ExceptionType);
        Assert.StartsWith("The key (5 bytes) does not deserialize as String", outcome.Abort.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task UnknownMethod_AbortsTheTransaction()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        TransactionOutcome outcome = await runtime.Client.SubmitAsync("AccountEntity", Key("a"), "Steal", ReadOnlyMemory<byte>.Empty);
        Assert.Equal(TransactionPhase.OptimisticLogicAbort, outcome.Phase);
        Assert.Equal(typeof(UnknownEntityException).FullName, outcome.Abort!.ExceptionType);
        Assert.Equal("Entity type AccountEntity has no method Steal.", outcome.Abort.Message);
    }

    [Theory]
    [InlineData(new byte[] { 1, 2, 3 })]
    [InlineData(new byte[] { })]
    [InlineData(new byte[] { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF })]
    public async Task ArgumentsThatDoNotDeserialize_AbortAndApplyNothing(byte[] args)
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        TransactionOutcome outcome = await runtime.Client.SubmitAsync("AccountEntity", Key("a"), "TransferTo", args);
        Assert.False(outcome.Committed);
        Assert.Equal(typeof(EntityArgumentException).FullName, outcome.Abort!.ExceptionType);
        Assert.StartsWith($"The arguments of TransferTo ({args.Length} bytes) do not deserialize", outcome.Abort.Message, StringComparison.Ordinal);
        Assert.Empty(await runtime.SnapshotAsync());
    }

    [Fact]
    public async Task RandomBytes_AsArgumentsAndKeys_AreRefusedOrRunButNeverStallTheRuntime()
    {
        // What a gateway could be sent: random and truncated argument and key bytes, including huge length prefixes.
        await using var runtime = EntityRuntime.Start(null, Entities);
        var random = new Random(5);
        string[] methods = ["TransferTo", "Withdraw", "Set", "Balance"];
        var outcomes = new List<Task<TransactionOutcome>>();
        for (int i = 0; i < 2_000; i++)
        {
            byte[] args = new byte[random.Next(0, 24)];
            random.NextBytes(args);
            if (i % 3 == 0 && args.Length >= 4)
            {
                BitConverter.TryWriteBytes(args.AsSpan(0, 4), random.Next(int.MaxValue / 2, int.MaxValue));
            }

            byte[] key = i % 5 == 0 ? args : Key($"k{i % 50}");
            outcomes.Add(i % 7 == 0
                ? runtime.Client.SubmitAsync("Bank", key, "Total", args)
                : runtime.Client.SubmitAsync("AccountEntity", key, methods[i % methods.Length], args));
        }

        foreach (TransactionOutcome outcome in await Task.WhenAll(outcomes))
        {
            if (outcome.Abort is { } abort)
            {
                Assert.Contains(abort.ExceptionType, new[]
                {
                    typeof(EntityArgumentException).FullName, typeof(InsufficientFundsException).FullName, typeof(UnknownEntityException).FullName,
                });
            }
        }

        // Still serving.
        await runtime.Client.Get<IAccount>("alive").Set(3);
        Assert.Equal(3, (await runtime.GetStateAsync<IAccount, Account>("alive"))!.Balance);
    }

    [Fact]
    public async Task ArgumentsForAMethodWithoutParameters_Abort()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        TransactionOutcome outcome = await runtime.Client.SubmitAsync("AccountEntity", Key("a"), "Balance", new byte[] { 1 });
        Assert.Equal(typeof(EntityArgumentException).FullName, outcome.Abort!.ExceptionType);
    }

    [Fact]
    public async Task CallsDeeperThanTheLimit_Abort()
    {
        await using var runtime = EntityRuntime.Start(o => o.MaxCallDepth = 10, Entities);
        Assert.Equal(9, await runtime.Client.Get<IProbe>("p").Recurse(9));
        var aborted = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").Recurse(11));
        Assert.Equal(typeof(CallGraphLimitException).FullName, aborted.ExceptionType);
        Assert.Contains("deeper than the limit of 10 nested calls", aborted.AbortMessage, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnUnregisteredInterface_OrAWrongKeyType_AbortsTheCaller()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        var unregistered = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").CallUnregistered());
        Assert.Equal(typeof(UnknownEntityException).FullName, unregistered.ExceptionType);
        Assert.Contains(nameof(IUnregistered), unregistered.AbortMessage, StringComparison.Ordinal);

        var wrongKey = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").WrongKeyType());
        Assert.Equal(typeof(EntityArgumentException).FullName, wrongKey.ExceptionType);
        Assert.Equal("Entity type AccountEntity is keyed by String, not Int32 (key 42).", wrongKey.AbortMessage);
    }

    [Fact]
    public async Task StateTouchedFromAnotherThread_Aborts()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        var aborted = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").TouchAfterTaskRun());
        Assert.Equal(typeof(InvalidOperationException).FullName, aborted.ExceptionType);
        Assert.Contains("ran on a thread that is not its partition's", aborted.AbortMessage, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnArgumentThatCannotBeSerialized_AbortsEvenWhenCaught()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        var aborted = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").PassUnserializable());
        Assert.Equal(typeof(EntityArgumentException).FullName, aborted.ExceptionType);
        Assert.StartsWith("The arguments of Sink(s).Take cannot be serialized", aborted.AbortMessage, StringComparison.Ordinal);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("after"));

        // The runtime goes on.
        await runtime.Client.Get<IAccount>("next").Set(2);
        Assert.Equal(2, (await runtime.GetStateAsync<IAccount, Account>("next"))!.Balance);
    }

    [Fact]
    public async Task AnEntityWhoseConstructorThrows_AbortsTheTransaction()
    {
        await using var runtime = EntityRuntime.Start(null, Entities);
        var aborted = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").CallFragile());
        Assert.Equal(typeof(InvalidOperationException).FullName, aborted.ExceptionType);
        Assert.Equal("fragile cannot be built", aborted.AbortMessage);
        Assert.Equal("Fragile", aborted.Entity);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("before"));
    }

    [Fact]
    public async Task AStoppedRuntime_RefusesWithObjectDisposed()
    {
        var runtime = EntityRuntime.Start(null, Entities);
        await runtime.DisposeAsync();
        await Assert.ThrowsAsync<ObjectDisposedException>(() => runtime.Client.Get<IAccount>("a").Set(1));
        await Assert.ThrowsAsync<ObjectDisposedException>(() => runtime.GetStateAsync<IAccount, Account>("a"));
    }

    [Fact]
    public async Task ABaseInterfaceOfSeveralEntityClasses_IsRefusedByName_AndItsDerivedInterfacesWork()
    {
        await using var runtime = EntityRuntime.Start(null, e => e.Add<Hotel>().Add<Flight>());
        var ambiguous = Assert.Throws<UnknownEntityException>(() => runtime.Client.Get<IStock>(1));
        Assert.Equal($"Entity interface {typeof(IStock).FullName} is implemented by several registered entity classes (Hotel, Flight); ask for an interface only one of them implements.", ambiguous.Message);

        await runtime.Client.Get<IHotel>(1).Stock(1);
        await runtime.Client.Get<IHotel>(1).Reserve("o1");
        var full = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IFlight>(1).Reserve("o1"));
        Assert.Equal("flight 1 is full", full.AbortMessage);
    }

    [Fact]
    public void RegisteringAClassTwiceByName_OrAnUnknownType_IsRefused()
    {
        var unknown = Assert.Throws<ArgumentException>(() => new SerialEntityRunner(e => e.Add(typeof(string))));
        Assert.Contains("has no generated registration", unknown.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => EntityRuntime.Start(o => o.Partitions = 0, Entities));
    }

    private static byte[] Key(string key) => MemoryPackSerializer.Serialize(key);
}
