using System.IO.Hashing;

namespace Dse.Darq.Tests;

/// <summary>The inline short-input XXH64 gives the library's values, so entry checksums (the log format) are unchanged.</summary>
public sealed class ShortXxHash64Tests
{
    [Fact]
    public void Hash_EveryLengthToSixtyFour_MatchesSystemIoHashing()
    {
        var random = new Random(11);
        var data = new byte[64];
        for (int round = 0; round < 50; round++)
        {
            random.NextBytes(data);
            long seed = round == 0 ? 0 : random.NextInt64(long.MinValue, long.MaxValue);
            for (int length = 0; length <= data.Length; length++)
            {
                var input = data.AsSpan(0, length);
                Assert.Equal(XxHash64.HashToUInt64(input, seed), ShortXxHash64.Hash(input, seed));
            }
        }
    }
}
