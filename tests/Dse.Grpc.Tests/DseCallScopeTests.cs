namespace Dse.Grpc.Tests;

/// <summary>The call scope on its own: what happens to a handler whose call is rolled back while it waits.</summary>
public sealed class DseCallScopeTests : IAsyncLifetime
{
    private readonly RelayCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task RunAsync_ReplyReachesRolledBackCall_HandlerNeverResumes()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var b = await _cluster.OpenAsync(3);

        // A's call consumes uncommitted client state, then waits on a reply.
        await client.StartLocalActionAsync();
        var request = client.EndAction();
        Assert.True(await a.StartActionAsync(request));
        var scope = new DseCallScope(a, CancellationToken.None);
        var reply = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var caught = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var run = scope.RunAsync(async () =>
        {
            try
            {
                await reply.Task;
            }
            catch (Exception)
            {
                caught.TrySetResult();
                throw;
            }

            return 0;
        });

        // The client's state is lost: A's call is rolled back while it waits.
        await _cluster.RestartAsync(client);
        await RelayCluster.WaitForWorldLineAsync(a, 1);

        // A live reply arrives: its receipt finds the call rolled back, and the handler must not resume.
        try
        {
            await scope.ReceiveAsync(DseHeader.FromOrigin(b.Id, 0, b.CurrentVersion));
            reply.SetResult();
        }
        catch (Exception ex)
        {
            reply.SetException(ex);
        }

        await Assert.ThrowsAsync<DseRolledBackException>(() => run);
        var first = await Task.WhenAny(caught.Task, Task.Delay(500));
        Assert.NotSame(caught.Task, first);
        Assert.True(scope.IsAbandoned);
    }
}
