using Microsoft.Extensions.Time.Testing;

namespace Dse.Workflows.Tests;

/// <summary>A fake clock that tells the test each time a timer is created on it (a backoff, a durable timer).</summary>
internal sealed class SignallingTimeProvider : TimeProvider
{
    private readonly FakeTimeProvider _fake = new(new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero));
    private readonly SemaphoreSlim _timers = new(0);

    public override DateTimeOffset GetUtcNow() => _fake.GetUtcNow();

    public override long GetTimestamp() => _fake.GetTimestamp();

    public override long TimestampFrequency => _fake.TimestampFrequency;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = _fake.CreateTimer(callback, state, dueTime, period);
        _timers.Release();
        return timer;
    }

    public void Advance(TimeSpan by) => _fake.Advance(by);

    /// <summary>Waits until one more timer has been created.</summary>
    public Task WaitForTimerAsync() => _timers.WaitAsync(TimeSpan.FromSeconds(30)).ContinueWith(t =>
    {
        if (!t.Result)
        {
            throw new TimeoutException("No timer was created.");
        }
    }, TaskScheduler.Default);
}
