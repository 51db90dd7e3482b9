using System.Diagnostics;
using Grpc.Core;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// The open-loop load: trips sent on schedule at a fixed rate whether or not earlier ones have answered, each one call
/// to the frontend from a plain client (no DSE header, so the answer comes after a barrier). A call that a crash or
/// rollback fails is sent again under the same trip id, which joins the trip's workflow if it survived or starts it
/// again if it was rolled back; its latency runs from the first attempt to the answer.
/// </summary>
internal sealed class TripLoad(ITripFrontend frontend)
{
    private static readonly TimeSpan s_callTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_giveUp = TimeSpan.FromSeconds(120);
    private static readonly TimeSpan s_retryDelay = TimeSpan.FromMilliseconds(200);

    /// <summary>Sends <paramref name="trips"/> at <paramref name="rate"/> per second; completes once every one has answered or been given up.</summary>
    public async Task<IReadOnlyList<TripResult>> RunAsync(IReadOnlyList<(string Trip, TripInput Input)> trips, double rate, CancellationToken cancellationToken)
    {
        var booked = new Task<TripResult>[trips.Count];
        long started = Stopwatch.GetTimestamp();
        for (int i = 0; i < trips.Count; i++)
        {
            // On schedule from the start, so a slow answer never delays the next trip.
            var wait = TimeSpan.FromSeconds(i / rate) - Stopwatch.GetElapsedTime(started);
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait, cancellationToken).ConfigureAwait(false);
            }

            booked[i] = BookAsync(trips[i].Trip, trips[i].Input, cancellationToken);
        }

        return await Task.WhenAll(booked).ConfigureAwait(false);
    }

    /// <summary>Books one trip, retrying while the frontend is down or a rollback fails the call, for up to two minutes.</summary>
    public async Task<TripResult> BookAsync(string trip, TripInput input, CancellationToken cancellationToken)
    {
        long began = Stopwatch.GetTimestamp();
        int attempts = 0;
        while (true)
        {
            attempts++;
            try
            {
                string outcome = await frontend.BookAsync(trip, input, DateTime.UtcNow + s_callTimeout, cancellationToken).ConfigureAwait(false);
                return new TripResult(trip, input, outcome, Stopwatch.GetElapsedTime(began).TotalMilliseconds, attempts);
            }
            catch (RpcException) when (cancellationToken.IsCancellationRequested)
            {
                throw new OperationCanceledException(cancellationToken);
            }
            catch (RpcException ex) when (IsTransient(ex.StatusCode) && Stopwatch.GetElapsedTime(began) < s_giveUp)
            {
                await Task.Delay(s_retryDelay, cancellationToken).ConfigureAwait(false);
            }
            catch (RpcException ex)
            {
                // Given up (never answered), or told an error, which no trip outcome equals: the checker reports either.
                string? told = IsTransient(ex.StatusCode) ? null : $"error: {ex.StatusCode}: {ex.Status.Detail}";
                return new TripResult(trip, input, told, Stopwatch.GetElapsedTime(began).TotalMilliseconds, attempts);
            }
        }
    }

    /// <summary>Failures a later attempt can get past: the frontend down or restarting, a rollback, a call cut off.</summary>
    private static bool IsTransient(StatusCode code) =>
        code is StatusCode.Unavailable or StatusCode.Aborted or StatusCode.DeadlineExceeded or StatusCode.Cancelled or StatusCode.Internal;
}
