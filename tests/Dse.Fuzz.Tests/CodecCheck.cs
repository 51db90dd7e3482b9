using System.Globalization;
using CsCheck;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Runs a property of a pure codec over mutated valid encodings with CsCheck, which shrinks a failing input to a small
/// one and prints its seed (<c>CsCheck_Seed=...</c> replays it). The budget follows <see cref="FuzzRun"/>'s variables:
/// <paramref name="defaultInputs"/> by default, <c>DSE_FUZZ_INPUTS</c>, or <c>DSE_FUZZ_SECONDS</c> as a time budget.
/// </summary>
internal static class CodecCheck
{
    /// <summary>A mutation with small positions and lengths (they wrap around the input), so that CsCheck shrinks it well.</summary>
    public static readonly Gen<Mutation> Mutation = Gen.Select(
        Gen.Int[0, Enum.GetValues<MutationKind>().Length - 1],
        Gen.Int[0, 4096],
        Gen.Int[1, 64],
        Gen.Long,
        (kind, at, length, value) => new Mutation((MutationKind)kind, at, length, value));

    /// <summary>Random bytes one time in ten, otherwise a valid encoding from <paramref name="valid"/> with 0 to 4 mutations.</summary>
    public static Gen<byte[]> Inputs(Gen<byte[]> valid) => Gen.Frequency(
        (1, Gen.Byte.Array[0, 96]),
        (9, Gen.Select(valid, valid, Mutation.Array[0, 4], (encoding, donor, mutations) =>
        {
            var bytes = encoding;
            foreach (var mutation in mutations)
            {
                bytes = mutation.ApplyTo(bytes, [donor]);
            }

            return bytes;
        })));

    /// <summary>Checks <paramref name="property"/> (which throws on a violation) for every input of the budget.</summary>
    public static void Sample(string target, ITestOutputHelper output, Gen<byte[]> inputs, Action<byte[]> property, int defaultInputs)
    {
        long count = 0;
        long iterations = defaultInputs;
        int seconds = -1;
        string? secondsText = Environment.GetEnvironmentVariable(FuzzRun.SecondsVariable);
        if (!string.IsNullOrEmpty(secondsText))
        {
            seconds = (int)double.Parse(secondsText, CultureInfo.InvariantCulture);
        }

        string? inputsText = Environment.GetEnvironmentVariable(FuzzRun.InputsVariable);
        if (!string.IsNullOrEmpty(inputsText))
        {
            iterations = long.Parse(inputsText, CultureInfo.InvariantCulture);
        }

        var clock = System.Diagnostics.Stopwatch.StartNew();
        inputs.Sample(
            bytes =>
            {
                Interlocked.Increment(ref count);
                property(bytes);
            },
            writeLine: output.WriteLine,
            iter: iterations,
            time: seconds,
            threads: 1,
            print: Hex);
        output.WriteLine($"{target}: {Interlocked.Read(ref count)} inputs in {clock.Elapsed.TotalSeconds:0.0} s");
    }

    public static string Hex(byte[] bytes) => bytes.Length == 0 ? "(empty)" : Convert.ToHexString(bytes);
}
