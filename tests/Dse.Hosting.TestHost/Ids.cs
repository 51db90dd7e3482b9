namespace Dse.Hosting.TestHost;

/// <summary>The StateObject ids of the program's two services.</summary>
internal static class Ids
{
    public const long Front = 1;

    public const long Back = 2;
}
