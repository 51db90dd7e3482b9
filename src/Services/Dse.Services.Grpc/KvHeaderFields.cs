using Google.Protobuf;

namespace Dse.Services.Grpc.V1;

/// <summary>A key-value request, with the field a caller may carry its DSE header in (kv.proto).</summary>
internal interface IKvRequest
{
    ByteString DseHeader { get; }
}

/// <summary>A key-value reply, with the field that carries the server's DSE header back to such a caller.</summary>
internal interface IKvReply
{
    ByteString DseHeader { get; set; }
}

/// <summary>The generated request message; its <c>dse_header</c> field is read by <see cref="ManualSpeculativeKvService"/>.</summary>
public sealed partial class GetRequest : IKvRequest;

/// <summary>The generated request message; its <c>dse_header</c> field is read by <see cref="ManualSpeculativeKvService"/>.</summary>
public sealed partial class PutRequest : IKvRequest;

/// <summary>The generated request message; its <c>dse_header</c> field is read by <see cref="ManualSpeculativeKvService"/>.</summary>
public sealed partial class DeleteRequest : IKvRequest;

/// <summary>The generated request message; its <c>dse_header</c> field is read by <see cref="ManualSpeculativeKvService"/>.</summary>
public sealed partial class CompareAndSwapRequest : IKvRequest;

/// <summary>The generated request message; its <c>dse_header</c> field is read by <see cref="ManualSpeculativeKvService"/>.</summary>
public sealed partial class ExecuteRequest : IKvRequest;

/// <summary>The generated reply message; <see cref="ManualSpeculativeKvService"/> fills its <c>dse_header</c> field.</summary>
public sealed partial class GetReply : IKvReply;

/// <summary>The generated reply message; <see cref="ManualSpeculativeKvService"/> fills its <c>dse_header</c> field.</summary>
public sealed partial class PutReply : IKvReply;

/// <summary>The generated reply message; <see cref="ManualSpeculativeKvService"/> fills its <c>dse_header</c> field.</summary>
public sealed partial class DeleteReply : IKvReply;

/// <summary>The generated reply message; <see cref="ManualSpeculativeKvService"/> fills its <c>dse_header</c> field.</summary>
public sealed partial class CompareAndSwapReply : IKvReply;

/// <summary>The generated reply message; <see cref="ManualSpeculativeKvService"/> fills its <c>dse_header</c> field.</summary>
public sealed partial class ExecuteReply : IKvReply;
