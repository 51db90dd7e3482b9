namespace Dse.Functions.Engine;

/// <summary>
/// Exact completion tracking for a transaction's call graph (Mattern's weight throwing, Styx's ack shares), in
/// integers: the root starts with <see cref="Full"/>; an awaited call takes half of its caller's credit and gives back
/// what it did not pass on with its reply; one-way calls split what their caller holds when it completes evenly with
/// the caller's own return (the remainder to the caller), so that every report travels with credit; an invocation that
/// ends holding credit with no caller to reply to returns it to the root. The graph is complete exactly when the root holds <see cref="Full"/> again: never early, since every running
/// invocation holds at least one unit, and exactly once, since the sum is only reached when all of it came back.
/// </summary>
internal static class AckCredit
{
    /// <summary>The root's credit: 2^120, enough for about 120 nested or parallel halvings.</summary>
    public static readonly UInt128 Full = UInt128.One << 120;

    /// <summary>Takes half of <paramref name="credit"/> for an awaited call; false when it cannot be split.</summary>
    public static bool TrySplitHalf(ref UInt128 credit, out UInt128 share)
    {
        if (credit < 2)
        {
            share = UInt128.Zero;
            return false;
        }

        share = credit >> 1;
        credit -= share;
        return true;
    }

    /// <summary>
    /// Splits <paramref name="credit"/> evenly over <paramref name="count"/> one-way calls, the remainder to the
    /// first; false when a share would be zero.
    /// </summary>
    public static bool TrySplitEven(UInt128 credit, int count, Span<UInt128> shares)
    {
        if (count <= 0 || shares.Length < count)
        {
            throw new ArgumentOutOfRangeException(nameof(count));
        }

        UInt128 each = credit / (uint)count;
        if (each == UInt128.Zero)
        {
            return false;
        }

        UInt128 remainder = credit - (each * (uint)count);
        for (int i = 0; i < count; i++)
        {
            shares[i] = each;
        }

        shares[0] += remainder;
        return true;
    }
}
