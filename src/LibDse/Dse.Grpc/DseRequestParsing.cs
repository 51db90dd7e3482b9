using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// Binds a gRPC service so that request bytes which do not parse as the request message end the call with
/// INVALID_ARGUMENT and a short reason (the method, the message type and the parser's complaint), before any handler or
/// interceptor runs. Generated marshallers let the parse error escape as an exception, which the server answers with
/// UNKNOWN ("Exception was thrown by handler.") and logs at Error with its stack trace; a refusal raised here is an
/// <see cref="RpcException"/>, which grpc-dotnet logs at Information in one line.
/// </summary>
/// <remarks>
/// To use it with a generated service, put <c>[BindServiceMethod(typeof(Bindings), nameof(Bindings.Bind))]</c> on the
/// implementation and have <c>Bind(ServiceBinderBase binder, FooBase? service)</c> call the generated
/// <c>Foo.BindService(DseRequestParsing.RefusingUnparseable(binder), service)</c>: grpc-dotnet prefers the attribute of
/// the most derived class, so the implementation's methods are bound with these marshallers.
/// </remarks>
public static class DseRequestParsing
{
    /// <summary>
    /// A binder that hands every method to <paramref name="binder"/> with <see cref="RefuseUnparseable"/> applied to it;
    /// pass it to a generated <c>BindService</c>.
    /// </summary>
    /// <param name="binder">The binder of the server (grpc-dotnet passes it to the bind method).</param>
    /// <param name="refused">Called with the method's full name and the refusal each time a request is refused, for
    /// example to count refusals; it must not throw.</param>
    public static ServiceBinderBase RefusingUnparseable(ServiceBinderBase binder, Action<string, RpcException>? refused = null)
    {
        ArgumentNullException.ThrowIfNull(binder);
        return new RefusingBinder(binder, refused);
    }

    /// <summary>
    /// <paramref name="method"/> with a request marshaller that turns a parse failure (an <see cref="IOException"/>,
    /// which protobuf's <c>InvalidProtocolBufferException</c> is) into INVALID_ARGUMENT naming the method and the message
    /// type; everything else about the method is unchanged.
    /// </summary>
    /// <param name="method">The method as generated.</param>
    /// <param name="refused">Called with the method's full name and the refusal each time a request is refused.</param>
    /// <param name="trailers">Trailers every refusal carries (a service's own error-code trailer, say); copied per refusal.</param>
    public static Method<TRequest, TResponse> RefuseUnparseable<TRequest, TResponse>(Method<TRequest, TResponse> method, Action<string, RpcException>? refused = null,
        Metadata? trailers = null)
        where TRequest : class
        where TResponse : class
    {
        ArgumentNullException.ThrowIfNull(method);
        var inner = method.RequestMarshaller;
        var deserialize = inner.ContextualDeserializer;
        string fullName = method.FullName;
        string typeName = typeof(TRequest).Name;
        var request = new Marshaller<TRequest>(inner.ContextualSerializer, context =>
        {
            try
            {
                return deserialize(context);
            }
            catch (IOException ex)
            {
                // The payload is in memory already: an I/O error here can only be the parser's.
                var refusal = new UnparseableRequestException($"{fullName}: the request is not a valid {typeName} message: {FirstSentence(ex.Message)}", Copy(trailers));
                refused?.Invoke(fullName, refusal);
                throw refusal;
            }
        });
        return new Method<TRequest, TResponse>(method.Type, method.ServiceName, method.Name, request, method.ResponseMarshaller);
    }

    private static Metadata Copy(Metadata? trailers)
    {
        var copy = new Metadata();
        if (trailers is not null)
        {
            foreach (var entry in trailers)
            {
                copy.Add(entry);
            }
        }

        return copy;
    }

    /// <summary>The parser's first sentence (protobuf goes on to guess at causes), so that the reason stays short.</summary>
    private static string FirstSentence(string message)
    {
        int end = message.IndexOf(". ", StringComparison.Ordinal);
        return end > 0 ? message[..(end + 1)] : message;
    }

    /// <summary>
    /// The refusal of bytes that do not parse. grpc-dotnet logs what a marshaller throws with the exception attached (at
    /// Information, "Error reading message."); bad input is not a fault, and where in the marshaller it was noticed
    /// tells nobody anything, so the exception carries no stack trace and logs as one line.
    /// </summary>
    private sealed class UnparseableRequestException(string detail, Metadata trailers) : RpcException(new Status(StatusCode.InvalidArgument, detail), trailers)
    {
        public override string? StackTrace => null;
    }

    /// <summary>Forwards every method, its request marshaller replaced, to the server's binder.</summary>
    private sealed class RefusingBinder(ServiceBinderBase inner, Action<string, RpcException>? refused) : ServiceBinderBase
    {
        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, UnaryServerMethod<TRequest, TResponse>? handler) =>
            inner.AddMethod(RefuseUnparseable(method, refused), handler);

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, ClientStreamingServerMethod<TRequest, TResponse>? handler) =>
            inner.AddMethod(RefuseUnparseable(method, refused), handler);

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, ServerStreamingServerMethod<TRequest, TResponse>? handler) =>
            inner.AddMethod(RefuseUnparseable(method, refused), handler);

        public override void AddMethod<TRequest, TResponse>(Method<TRequest, TResponse> method, DuplexStreamingServerMethod<TRequest, TResponse>? handler) =>
            inner.AddMethod(RefuseUnparseable(method, refused), handler);
    }
}
