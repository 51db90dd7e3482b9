namespace Dse.Samples.TravelReservation;

/// <summary>Which clusters a <see cref="TravelRun"/> measures.</summary>
public enum TravelMode
{
    /// <summary>A speculative cluster, then a fresh non-speculative one (the baseline): the comparison of libDSE's Fig. 9.</summary>
    Both,

    /// <summary>The speculative cluster only.</summary>
    Speculative,

    /// <summary>The non-speculative baseline only: every step of a trip waits for its group commit.</summary>
    NonSpeculative,
}
