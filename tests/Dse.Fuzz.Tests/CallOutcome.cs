using Grpc.Core;

namespace Dse.Fuzz.Tests;

/// <summary>How a raw call ended: OK with the response bytes, or a status.</summary>
internal readonly record struct CallOutcome(StatusCode Status, string Detail, byte[]? Response, Metadata? Trailers)
{
    public bool IsOk => Status == StatusCode.OK;

    public override string ToString() => IsOk ? "OK" : $"{Status} \"{Detail}\"";
}
