using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>Turns what the speculative services throw into statuses that name what was wrong; anything else passes through.</summary>
internal static class ServiceErrors
{
    /// <summary>
    /// The status for an error of a store or log operation: INVALID_ARGUMENT for bad input, UNAVAILABLE when the
    /// StateObject cannot serve; <c>null</c> for anything else (DSE's own statuses, cancellation), to be rethrown as is.
    /// </summary>
    public static RpcException? Map(Exception error, StateObject owner, string method) => error switch
    {
        RpcException or OperationCanceledException => null,
        ArgumentException argument => new RpcException(new Status(StatusCode.InvalidArgument, $"{method}: {argument.Message}")),
        DseFaultedException faulted => new RpcException(new Status(StatusCode.Unavailable, $"{method}: StateObject {owner.Id} cannot serve calls: {faulted.Message}", faulted)),
        InvalidOperationException when !owner.IsConnected => new RpcException(new Status(StatusCode.Unavailable, $"{method}: StateObject {owner.Id} is not connected to its coordinator.", error)),
        _ => null,
    };

    /// <summary>INVALID_ARGUMENT naming the field and what was wrong with it.</summary>
    public static RpcException InvalidArgument(string method, string message) =>
        new(new Status(StatusCode.InvalidArgument, $"{method}: {message}"));

    /// <summary>NOT_FOUND for a procedure name the host never registered.</summary>
    public static RpcException UnknownProcedure(SpeculativeKv kv, string method, string name) =>
        new(new Status(StatusCode.NotFound, $"{method}: SpeculativeKv {kv.Id} has no stored procedure named '{name}'; the host registers procedures with SpeculativeKv.RegisterProcedure."));

    /// <summary>FAILED_PRECONDITION for a procedure that threw: its writes were discarded.</summary>
    public static RpcException ProcedureFailed(string method, string name, Exception error) =>
        new(new Status(StatusCode.FailedPrecondition, $"{method}: stored procedure '{name}' failed, so none of its writes was applied: {error.Message}", error));
}
