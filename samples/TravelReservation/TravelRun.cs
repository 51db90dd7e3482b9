using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using Dse.Samples.Shared;
using Dse.Samples.TravelReservation.Wire;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// libDSE's travel reservation experiment (Fig. 9) as local processes: per mode a fresh cluster (DSE coordinator,
/// frontend, reservation services), an open-loop load of trips for each configuration (trips of N services), then a
/// quiesce and the consistency check (<see cref="TravelChecker"/>) on what every store and the frontend hold.
/// </summary>
public static class TravelRun
{
    private static readonly TimeSpan s_readTimeout = TimeSpan.FromSeconds(120);
    private static readonly TimeSpan s_quietMoment = TimeSpan.FromMilliseconds(500);
    private static readonly TimeSpan s_compilationPause = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Runs the experiment; <paramref name="progress"/> (optional) receives one line per step,
    /// <paramref name="configurationFinished"/> (optional) each configuration's measurements as soon as it has ended, and
    /// <paramref name="modeFinished"/> (optional) each cluster's results once it has been checked.
    /// </summary>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    /// <exception cref="InvalidOperationException">A process of a cluster failed; the message carries its standard error.</exception>
    public static async Task<TravelResults> RunAsync(
        TravelOptions options,
        TextWriter? progress = null,
        Action<ConfigurationResult>? configurationFinished = null,
        Action<ModeResult>? modeFinished = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        int seed = options.Seed ?? Random.Shared.Next();
        string root = RunDirectory.Create(options.DataDirectory, "dse-travel-");
        try
        {
            ModeResult? speculative = null;
            ModeResult? nonSpeculative = null;
            if (options.Mode != TravelMode.NonSpeculative)
            {
                speculative = await RunModeAsync(options, true, seed, root, progress, configurationFinished, cancellationToken).ConfigureAwait(false);
                modeFinished?.Invoke(speculative);
            }

            if (options.Mode != TravelMode.Speculative)
            {
                nonSpeculative = await RunModeAsync(options, false, seed, root, progress, configurationFinished, cancellationToken).ConfigureAwait(false);
                modeFinished?.Invoke(nonSpeculative);
            }

            return new TravelResults { Options = options, Seed = seed, Speculative = speculative, NonSpeculative = nonSpeculative };
        }
        finally
        {
            if (options.DataDirectory is null)
            {
                RunDirectory.TryDelete(root);
            }
        }
    }

    private static async Task<ModeResult> RunModeAsync(
        TravelOptions options, bool speculative, int seed, string root, TextWriter? progress, Action<ConfigurationResult>? configurationFinished, CancellationToken cancellationToken)
    {
        string mode = speculative ? "spec" : "nonspec";
        string directory = RunDirectory.Fresh(root, mode);
        int services = options.Services.Max();
        var settings = new ClusterSettings(speculative, options.GroupCommit, services, options.Items, options.EffectiveCapacity);
        progress?.WriteLine($"{mode}: starting the cluster (DSE coordinator, {services} reservation services, frontend) in {directory}");
        long starting = Stopwatch.GetTimestamp();
        await using var cluster = await TravelCluster.StartAsync(directory, settings, cancellationToken).ConfigureAwait(false);
        using var frontend = WorkflowTripFrontend.Connect(cluster.FrontendAddress);
        var load = new TripLoad(frontend);

        // The same seed in both modes: both clusters are sent the same trips.
        var planner = new TripPlanner(seed, options.Items);
        var sent = new List<TripResult>();
        progress?.WriteLine(Invariant($"{mode}: cluster serving after {Stopwatch.GetElapsedTime(starting).TotalSeconds:F1} s; warming up with {options.WarmUpTrips} trips over {services} services (not measured)"));
        var warmUp = Plan(planner, $"trip-{mode}-warmup", options.WarmUpTrips, services);
        for (int half = 0; half < 2; half++)
        {
            // The runtime compiles a method's optimized code only after a quiet moment and 30 more calls: the first half
            // gets the hot paths compiled quickly, the second half calls them often enough, and the pause after it lets
            // seven processes' background compilation finish before the measured trips rather than during them.
            var batch = half == 0 ? warmUp[..(warmUp.Length / 2)] : warmUp[(warmUp.Length / 2)..];
            sent.AddRange(await load.RunAsync(batch, options.WarmUpRate, cancellationToken).ConfigureAwait(false));
            await Task.Delay(half == 0 ? s_quietMoment : s_compilationPause, cancellationToken).ConfigureAwait(false);
        }

        long loadStarted = Stopwatch.GetTimestamp();
        Task<int> chaos = Task.FromResult(0);
        if (options.Chaos)
        {
            var plan = ChaosPlan.Draw(seed, services, options.Duration * options.Services.Count);
            progress?.WriteLine(Invariant($"{mode}: chaos (seed {seed}): {TravelServices.Names[plan.Service]} is killed after {plan.ServiceKillAt.TotalSeconds:F1} s, the frontend after {plan.FrontendKillAt.TotalSeconds:F1} s"));
            chaos = Task.Run(() => plan.RunAsync(cluster, loadStarted, progress, mode, cancellationToken), cancellationToken);
        }

        var configurations = new List<ConfigurationResult>();
        foreach (int n in options.Services)
        {
            progress?.WriteLine(Invariant($"{mode}: {options.TripsPerConfiguration} trips booking {n} service{(n == 1 ? string.Empty : "s")} each at {options.Rate} trips/s"));
            long began = Stopwatch.GetTimestamp();
            var trips = await load.RunAsync(Plan(planner, $"trip-{mode}-{n}", options.TripsPerConfiguration, n), options.Rate, cancellationToken).ConfigureAwait(false);
            var configuration = new ConfigurationResult { Speculative = speculative, Services = n, Trips = trips, Elapsed = Stopwatch.GetElapsedTime(began) };
            configurations.Add(configuration);
            sent.AddRange(trips);
            configurationFinished?.Invoke(configuration);
        }

        int kills = await chaos.ConfigureAwait(false);
        progress?.WriteLine($"{mode}: load over; reading every store and every trip's outcome (without a DSE header) and checking");
        var violations = await CheckAsync(cluster, frontend, sent, cancellationToken).ConfigureAwait(false);
        return new ModeResult { Speculative = speculative, Configurations = configurations, Kills = kills, CheckedTrips = sent.Count, Violations = violations };
    }

    /// <summary><paramref name="count"/> trips of <paramref name="services"/> services, their ids <c>PREFIX-i</c>.</summary>
    private static (string Trip, TripInput Input)[] Plan(TripPlanner planner, string prefix, int count, int services)
    {
        var trips = new (string, TripInput)[count];
        for (int i = 0; i < count; i++)
        {
            trips[i] = (string.Create(CultureInfo.InvariantCulture, $"{prefix}-{i}"), planner.Next(services));
        }

        return trips;
    }

    /// <summary>Reads every store and every trip's record at the frontend, all without a DSE header, and checks them.</summary>
    private static async Task<IReadOnlyList<string>> CheckAsync(TravelCluster cluster, ITripFrontend frontend, List<TripResult> sent, CancellationToken cancellationToken)
    {
        var holdings = new List<ServiceHoldings>();
        for (int i = 0; i < cluster.ServiceAddresses.Count; i++)
        {
            using var channel = Channels.Create(cluster.ServiceAddresses[i], authority: null);
            var client = new Reservation.ReservationClient(channel);
            var reply = await PlainCalls.RetryAsync(
                $"inspect {TravelServices.Names[i]}",
                cluster.Describe,
                async deadline => await client.InspectAsync(new InspectRequest(), deadline: deadline, cancellationToken: cancellationToken),
                s_readTimeout,
                cancellationToken).ConfigureAwait(false);
            holdings.Add(new ServiceHoldings(reply.Service, reply.Items.Select(item => new ItemHolding(item.Item, item.Capacity, item.Holders.ToArray())).ToArray()));
        }

        // Every trip sent, and every holder (a holder the launcher never sent is an orphan, but ask the frontend anyway).
        var ids = sent.Select(t => t.Trip).Concat(holdings.SelectMany(h => h.Items).SelectMany(i => i.Holders)).Distinct(StringComparer.Ordinal).ToArray();
        var described = new ConcurrentDictionary<string, IReadOnlyList<string>?>(StringComparer.Ordinal);
        await Parallel.ForEachAsync(ids, new ParallelOptions { MaxDegreeOfParallelism = 8, CancellationToken = cancellationToken }, async (id, ct) =>
            described[id] = await PlainCalls.RetryAsync($"describe {id}", cluster.Describe, deadline => frontend.DescribeAsync(id, deadline, ct), s_readTimeout, ct).ConfigureAwait(false)).ConfigureAwait(false);

        var records = new List<TripRecord>(ids.Length);
        var sentIds = new HashSet<string>(StringComparer.Ordinal);
        foreach (var trip in sent)
        {
            sentIds.Add(trip.Trip);
            var outcomes = described[trip.Trip];
            records.Add(new TripRecord(trip.Trip, trip.Input.Bookings(), trip.Outcome, outcomes is not null, outcomes ?? []));
        }

        foreach (string id in ids.Where(id => !sentIds.Contains(id)))
        {
            records.Add(new TripRecord(id, [], null, described[id] is not null, described[id] ?? []));
        }

        return TravelChecker.Check(holdings, records);
    }

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);
}
