namespace Dse.Samples.HelloDse;

/// <summary>The cluster-unique ids of the sample's StateObjects; the coordinator tells participants apart by them.</summary>
public static class HelloDseIds
{
    /// <summary>The Greeter's <see cref="GreetingCount"/>.</summary>
    public const long Greeter = 1;

    /// <summary>The Visits service's <see cref="VisitBook"/>.</summary>
    public const long Visits = 2;
}
