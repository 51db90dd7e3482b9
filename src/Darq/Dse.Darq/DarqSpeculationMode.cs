namespace Dse.Darq;

/// <summary>How far a DARQ lets work run ahead of persistence (<see cref="DarqOptions.Speculation"/>).</summary>
public enum DarqSpeculationMode
{
    /// <summary>
    /// No speculation, the baseline: the processor sees an IN message only once it is committed, and OUT messages leave
    /// only once committed, so nothing the DARQ does leaves before it is durable.
    /// </summary>
    Off = 0,

    /// <summary>
    /// Intra-participant speculation (the default): the processor sees IN messages as soon as they are appended, before
    /// they are committed; OUT messages leave only once committed. A DARQ restart restarts its processor.
    /// </summary>
    IntraParticipant = 1,

    /// <summary>
    /// General speculation through LibDse: the DARQ is a StateObject, OUT messages leave as soon as they are appended
    /// with the DSE header of the source's vertex at sending, and a failure rolls dependent DARQs back (see <see cref="DarqOptions.Dse"/>).
    /// </summary>
    General = 2,
}
