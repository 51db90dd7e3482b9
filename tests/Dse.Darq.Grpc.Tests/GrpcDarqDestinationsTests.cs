namespace Dse.Darq.Grpc.Tests;

public sealed class GrpcDarqDestinationsTests
{
    [Fact]
    public void Resolve_MappedFallbackAndUnknownNames_FindTheRightDestination()
    {
        var local = new DarqDestinationRegistry();
        var nearby = new ObservedDestination("nearby", inner: null!); // never delivered to here
        local.Add("nearby", nearby);
        using var destinations = new GrpcDarqDestinations(local).Add("billing", new Uri("http://127.0.0.1:1"));

        Assert.IsType<GrpcDarqDestination>(destinations.Resolve("billing"));
        Assert.Same(nearby, destinations.Resolve("nearby"));
        Assert.Null(destinations.Resolve("unknown"));
        Assert.True(destinations.Remove("billing"));
        Assert.Null(destinations.Resolve("billing"));
    }

    [Fact]
    public void Add_RelativeOrNonHttpAddress_IsRefusedNamingTheDestination()
    {
        using var destinations = new GrpcDarqDestinations();

        var relative = Assert.Throws<ArgumentException>(() => destinations.Add("billing", new Uri("/b", UriKind.Relative)));
        var ftp = Assert.Throws<ArgumentException>(() => destinations.Add("billing", new Uri("ftp://127.0.0.1/")));

        Assert.Contains("'billing'", relative.Message, StringComparison.Ordinal);
        Assert.Contains("ftp://", ftp.Message, StringComparison.Ordinal);
        Assert.Null(destinations.Resolve("billing"));
    }

    [Fact]
    public void Add_AfterDispose_Throws()
    {
        var destinations = new GrpcDarqDestinations();
        destinations.Dispose();

        Assert.Throws<ObjectDisposedException>(() => destinations.Add("billing", new Uri("http://127.0.0.1:1")));
    }
}
