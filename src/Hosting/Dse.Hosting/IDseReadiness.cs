namespace Dse.Hosting;

/// <summary>
/// Whether the host's StateObjects are connected to the coordinator. The host starts without waiting for them (a
/// coordinator outage must not hold the host's start); a StateObject throws if used before it connected, so code that
/// runs from the host's start awaits <see cref="WhenReadyAsync"/> first.
/// </summary>
public interface IDseReadiness
{
    /// <summary>Whether every registered StateObject has connected.</summary>
    bool IsReady { get; }

    /// <summary>Completes once every registered StateObject has connected.</summary>
    /// <exception cref="InvalidOperationException">A StateObject cannot connect (the coordinator refused it, its storage is corrupt); the message names it.</exception>
    /// <exception cref="OperationCanceledException">The host stopped before they connected, or <paramref name="cancellationToken"/> was cancelled.</exception>
    Task WhenReadyAsync(CancellationToken cancellationToken = default);
}
