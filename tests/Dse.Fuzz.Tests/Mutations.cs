namespace Dse.Fuzz.Tests;

/// <summary>Random and mutated inputs built from valid encodings.</summary>
internal static class Mutations
{
    /// <summary>
    /// One input: usually a valid encoding with 1 to 4 mutations (sometimes none, as a control), sometimes random
    /// bytes; returns what was done, for the failure message.
    /// </summary>
    public static (byte[] Bytes, string How) Next(Random random, IReadOnlyList<byte[]> valid, int maxRandomLength = 256)
    {
        int pick = random.Next(10);
        if (pick == 0 || valid.Count == 0)
        {
            var bytes = new byte[random.Next(maxRandomLength + 1)];
            random.NextBytes(bytes);
            return (bytes, $"{bytes.Length} random bytes");
        }

        int source = random.Next(valid.Count);
        var input = valid[source];
        if (pick == 1)
        {
            return (input, $"valid encoding {source}, unchanged");
        }

        var applied = new List<Mutation>();
        for (int i = random.Next(1, 5); i > 0; i--)
        {
            var mutation = Mutation.Next(random);
            applied.Add(mutation);
            input = mutation.ApplyTo(input, valid);
        }

        return (input, $"valid encoding {source} with {string.Join(", ", applied)}");
    }
}
