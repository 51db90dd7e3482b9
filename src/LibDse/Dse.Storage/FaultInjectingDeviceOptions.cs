namespace Dse.Storage;

/// <summary>Options of a <see cref="FaultInjectingDevice"/>. Faults can also be armed later through its methods.</summary>
public sealed class FaultInjectingDeviceOptions
{
    /// <summary>Seed of the generator behind the fault probabilities, so that a run can be replayed. Default 0.</summary>
    public int Seed { get; set; }

    /// <summary>Probability in [0, 1] that a write fails with <see cref="DeviceErrorCodes.InjectedFault"/> without being written. Default 0.</summary>
    public double WriteFailureProbability { get; set; }

    /// <summary>Probability in [0, 1] that a read fails with <see cref="DeviceErrorCodes.InjectedFault"/>. Default 0.</summary>
    public double ReadFailureProbability { get; set; }

    internal void Validate()
    {
        ValidateProbability(WriteFailureProbability, nameof(WriteFailureProbability));
        ValidateProbability(ReadFailureProbability, nameof(ReadFailureProbability));
    }

    internal static void ValidateProbability(double value, string name)
    {
        if (double.IsNaN(value) || value < 0 || value > 1)
        {
            throw new ArgumentOutOfRangeException(name, value, "A probability must be between 0 and 1.");
        }
    }
}
