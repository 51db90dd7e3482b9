namespace Dse.Tests;

/// <summary>
/// The simulation's forged messages (docs/libdse.md, "Header rules"): a header naming a participant that never
/// connected, a version far beyond the lead, or a near-future version of a real participant, delivered straight to a
/// live receiver. The first two must be refused and change nothing; the third is accepted, and the quiesce phase's
/// liveness check then proves it cannot hold the receiver's versions (the named participant persists up to it).
/// </summary>
internal static class SimulationForgery
{
    /// <summary>Delivers one forged header to <paramref name="receiver"/>; returns whether it was accepted (the action is open then).</summary>
    public static async Task<bool> DeliverAsync(MemoryStateObject receiver, IReadOnlyList<long> participants, Random rng, Func<string, string> fail)
    {
        int kind = rng.Next(3);
        var others = participants.Where(id => id != receiver.Id).ToList();
        long named = others[rng.Next(others.Count)];
        var header = kind switch
        {
            0 => DseHeader.FromOrigin(participants.Max() + 1 + rng.Next(100), receiver.WorldLine, 1),
            1 => DseHeader.FromOrigin(named, receiver.WorldLine, receiver.Options.MaxVersionLead * 4 + rng.Next(1000)),
            _ => DseHeader.FromOrigin(named, receiver.WorldLine, receiver.CurrentVersion + 1 + rng.Next(50)),
        };

        // A refresh on the way may apply a pending decision, after which the header is from a lower world-line and is
        // discarded: that changes nothing either.
        try
        {
            bool accepted = await receiver.StartActionAsync(header);
            Assert.True(kind == 2 || !accepted, fail($"a forged header ({header}) was accepted instead of refused"));
            return accepted;
        }
        catch (DseHeaderRejectedException)
        {
            Assert.True(kind != 2, fail($"a plausible forged header ({header}) was refused"));
            return false;
        }
    }
}
