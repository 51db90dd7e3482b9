namespace Dse.Samples.TravelReservation;

/// <summary>How a <see cref="TravelCluster"/>'s processes run.</summary>
/// <param name="Speculative">Whether every process runs speculatively (false: the baseline, every step persisted before the next).</param>
/// <param name="GroupCommit">Every process's group-commit period.</param>
/// <param name="Services">How many reservation services (the first of hotel, flight, car, train, insurance), 1 to 5.</param>
/// <param name="Items">Items per service, created on a service's first start.</param>
/// <param name="Capacity">Trips per item, set on a service's first start.</param>
public sealed record ClusterSettings(bool Speculative, TimeSpan GroupCommit, int Services, int Items, int Capacity);
