using Dse.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Dse.Hosting.Tests;

/// <summary>Binding <c>Dse:*</c> configuration and failing the host's start with a message naming a bad key.</summary>
public sealed class DseConfigurationTests
{
    [Fact]
    public async Task AddDse_ConfigurationSection_BindsDseOptionsOfTheStateObject()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(
            ("Dse:ObjectId", "42"),
            ("Dse:GroupCommitPeriod", "00:00:00.050"),
            ("Dse:Speculative", "false"),
            ("Dse:HeartbeatPeriod", "00:00:02"),
            ("Dse:ShutdownTimeout", "00:00:03")));

        var stateObject = host.Services.GetRequiredService<CounterStateObject>();
        var hosting = host.Services.GetRequiredService<IOptions<DseHostingOptions>>().Value;

        Assert.Equal(42, stateObject.Id);
        Assert.Equal(TimeSpan.FromMilliseconds(50), stateObject.Options.GroupCommitPeriod);
        Assert.False(stateObject.Options.Speculative);
        Assert.Equal(TimeSpan.FromSeconds(2), stateObject.Options.HeartbeatPeriod);
        Assert.True(stateObject.Options.RunBackgroundTasks);
        Assert.NotNull(stateObject.Options.LoggerFactory);
        Assert.Equal(TimeSpan.FromSeconds(3), hosting.ShutdownTimeout);
        Assert.Same(stateObject, host.Services.GetRequiredService<StateObject>());
    }

    [Fact]
    public async Task AddDse_CodeConfigureAfterConfiguration_CodeWins()
    {
        await using var storage = new CounterStorage();
        var log = await storage.OpenAsync();
        using var host = TestHost.Build(TestHost.Config(("Dse:ObjectId", "5")), dse =>
        {
            dse.Services.AddDse(options => options.ObjectId = 6);
            dse.AddStateObject((_, options) => new CounterStateObject(options, log));
        });

        Assert.Equal(6, host.Services.GetRequiredService<CounterStateObject>().Id);
    }

    [Theory]
    [InlineData("Dse:ObjectId", "-5", "Dse:ObjectId must be set to a non-negative")]
    [InlineData("Dse:GroupCommitPeriod", "-00:00:01", "Dse:GroupCommitPeriod is invalid")]
    [InlineData("Dse:HeartbeatPeriod", "00:00:00", "Dse:HeartbeatPeriod is invalid")]
    [InlineData("Dse:ShutdownTimeout", "-00:00:01", "Dse:ShutdownTimeout must be between 0 and 1 hour")]
    [InlineData("Dse:MaxConnectRetryDelay", "00:00:00.001", "Dse:MaxConnectRetryDelay must be between")]
    [InlineData("Dse:Coordinator", "ftp://coordinator:5000", "Dse:Coordinator must be \"in-process\" or the absolute http or https URL")]
    [InlineData("Dse:Coordinator", "coordinator:5000/not a url", "Dse:Coordinator must be")]
    [InlineData("Dse:BarrierTimeout", "00:00:00", "Dse:BarrierTimeout must be between 10 ms and 1 hour, or -00:00:00.001 for no bound")]
    [InlineData("Dse:CommitStallTimeout", "02:00:00", "Dse:CommitStallTimeout must be between 100 ms and 1 hour")]
    [InlineData("Dse:ExpectedParticipants:0", "2", "Dse:ExpectedParticipants (2) must include 1, the id of StateObject CounterStateObject (id from Dse:ObjectId)")]
    [InlineData("Dse:ExpectedParticipants:0", "-3", "Dse:ExpectedParticipants must hold non-negative ids (got -3)")]
    public async Task StartAsync_InvalidOption_FailsNamingTheKey(string key, string value, string expected)
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config((key, value)));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(expected, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AddDse_ExpectedParticipantsInConfiguration_BoundAndAccepted()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:ExpectedParticipants:0", "1"), ("Dse:ExpectedParticipants:1", "3")));

        var options = host.Services.GetRequiredService<IOptions<DseHostingOptions>>().Value;

        Assert.Equal([1L, 3L], options.ExpectedParticipants);
        Assert.Equal(TimeSpan.FromSeconds(30), options.BarrierTimeout);
        Assert.Equal(TimeSpan.FromSeconds(30), options.CommitStallTimeout);
    }

    [Fact]
    public async Task StartAsync_ExpectedParticipantsWithRemoteCoordinator_FailsNamingTheKey()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", "http://coordinator:5000"), ("Dse:ExpectedParticipants:0", "1")));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("Dse:ExpectedParticipants applies to the in-process coordinator only", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_InterceptorsForAStateObjectTypeNeverAdded_FailsNamingTheTypeAndTheFix()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(), dse => dse.AddGrpcInterceptors<SnapshotStateObject>());

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(
            "AddGrpcInterceptors<SnapshotStateObject>() intercepts calls on behalf of a StateObject of type SnapshotStateObject, but no StateObject is registered as that type (registered: CounterStateObject (id from Dse:ObjectId))",
            error.Message,
            StringComparison.Ordinal);
        Assert.Contains(".AddStateObject<SnapshotStateObject>(", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_InterceptorsAddedBeforeTheirStateObject_Starts()
    {
        await using var storage = new CounterStorage();
        var log = await storage.OpenAsync();
        using var host = TestHost.Build(TestHost.Config(), dse => dse
            .AddGrpcInterceptors<CounterStateObject>()
            .AddStateObject((_, options) => new CounterStateObject(options, log)));

        await host.StartCounterAsync();

        Assert.NotNull(host.Services.GetRequiredService<DseServerInterceptor<CounterStateObject>>());
        await host.StopAsync();
    }

    [Fact]
    public async Task StartAsync_UnparsableValue_FailsNamingTheKey()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:GroupCommitPeriod", "soon")));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.StartAsync());

        Assert.Contains("Dse:GroupCommitPeriod", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_NoObjectIdForDefaultStateObject_FailsNamingObjectId()
    {
        await using var storage = new CounterStorage();
        var config = TestHost.Config();
        config.Remove("Dse:ObjectId");
        using var host = await TestHost.BuildCounterAsync(storage, config);

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("Dse:ObjectId must be set to a non-negative, cluster-unique id (got -1): StateObject CounterStateObject", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_TwoStateObjectsWithOneId_FailsNamingBoth()
    {
        await using var storage = new CounterStorage();
        var first = await storage.OpenAsync();
        var second = await storage.OpenAsync();
        using var host = TestHost.Build(TestHost.Config(("Dse:ObjectId", "7")), dse => dse
            .AddStateObject((_, options) => new CounterStateObject(options, first))
            .AddStateObject((_, options) => new CounterStateObject(options, second), objectId: 7));

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("CounterStateObject (id from Dse:ObjectId) and CounterStateObject (objectId 7) both have id 7", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void UseRemoteCoordinator_RelativeAddress_ThrowsNamingCoordinator()
    {
        var dse = new ServiceCollection().AddDse();

        var error = Assert.Throws<ArgumentException>(() => dse.UseRemoteCoordinator(new Uri("/coordinator", UriKind.Relative)));

        Assert.Contains("Dse:Coordinator", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AddStateObject_NegativeObjectId_Throws()
    {
        var dse = new ServiceCollection().AddDse();

        Assert.Throws<ArgumentOutOfRangeException>(() => dse.AddStateObject<CounterStateObject>((_, _) => throw new InvalidOperationException("not built"), objectId: -1));
    }
}
