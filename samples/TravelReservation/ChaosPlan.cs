using System.Diagnostics;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// When <c>--chaos</c> strikes in a cluster's load, drawn from the seed: a reservation service is killed (SIGKILL) a
/// fifth to under half of the way through, then the frontend a little over half to four fifths of the way; each is
/// restarted on its port and storage at once.
/// </summary>
/// <param name="Service">The index of the service killed (in booking order).</param>
/// <param name="ServiceKillAt">When the service is killed, from the start of the measured load.</param>
/// <param name="FrontendKillAt">When the frontend is killed, from the start of the measured load.</param>
public sealed record ChaosPlan(int Service, TimeSpan ServiceKillAt, TimeSpan FrontendKillAt)
{
    /// <summary>Draws the plan for a cluster of <paramref name="services"/> services whose load sends trips for <paramref name="load"/>.</summary>
    public static ChaosPlan Draw(int seed, int services, TimeSpan load)
    {
        var random = new Random(seed);
        int service = random.Next(services);
        var serviceAt = load * (0.2 + (0.25 * random.NextDouble()));
        var frontendAt = load * (0.55 + (0.25 * random.NextDouble()));
        return new ChaosPlan(service, serviceAt, frontendAt);
    }

    /// <summary>Carries the plan out on <paramref name="cluster"/>, timed from <paramref name="loadStarted"/> (a <see cref="Stopwatch"/> timestamp); returns the kills done.</summary>
    public async Task<int> RunAsync(TravelCluster cluster, long loadStarted, TextWriter? progress, string mode, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(cluster);
        string name = TravelServices.Names[Service];
        await DelayUntilAsync(loadStarted, ServiceKillAt, cancellationToken).ConfigureAwait(false);
        long killed = Stopwatch.GetTimestamp();
        await cluster.KillAndRestartServiceAsync(Service, cancellationToken).ConfigureAwait(false);
        progress?.WriteLine($"{mode}: chaos: killed {name} (SIGKILL) and restarted it on its port and storage; it served again after {Stopwatch.GetElapsedTime(killed).TotalSeconds:F1} s");

        await DelayUntilAsync(loadStarted, FrontendKillAt, cancellationToken).ConfigureAwait(false);
        killed = Stopwatch.GetTimestamp();
        await cluster.KillAndRestartFrontendAsync(cancellationToken).ConfigureAwait(false);
        progress?.WriteLine($"{mode}: chaos: killed the frontend (SIGKILL) and restarted it on its port and storage; it served again after {Stopwatch.GetElapsedTime(killed).TotalSeconds:F1} s");
        return 2;
    }

    private static async Task DelayUntilAsync(long started, TimeSpan at, CancellationToken cancellationToken)
    {
        var wait = at - Stopwatch.GetElapsedTime(started);
        if (wait > TimeSpan.Zero)
        {
            await Task.Delay(wait, cancellationToken).ConfigureAwait(false);
        }
    }
}
