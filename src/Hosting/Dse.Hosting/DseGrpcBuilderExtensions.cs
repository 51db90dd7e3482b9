using Dse;
using Dse.Grpc;
using Dse.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Wires the DSE gRPC interceptors (Dse.Grpc) into a host built with <c>AddDse</c>.</summary>
public static class DseGrpcBuilderExtensions
{
    /// <summary>
    /// Makes every gRPC service of the host speculative on behalf of the StateObject registered as
    /// <typeparamref name="TStateObject"/>: each call runs through a <see cref="DseServerInterceptor"/> (see
    /// docs/grpc.md). Also registers a <see cref="DseClientInterceptor"/> singleton for outgoing calls; add it to gRPC
    /// clients with <c>AddGrpcClient&lt;T&gt;(...).AddDseInterceptor()</c> (see
    /// <see cref="DseGrpcClientBuilderExtensions.AddDseInterceptor"/>) or <c>channel.Intercept(...)</c>. Calls that arrive
    /// before the StateObject connected fail with UNAVAILABLE; a reply that waits at its barrier longer than
    /// <see cref="DseHostingOptions.BarrierTimeout"/> fails with DEADLINE_EXCEEDED. The host's start fails if no
    /// StateObject is registered as <typeparamref name="TStateObject"/>.
    /// </summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder AddGrpcInterceptors<TStateObject>(this IDseBuilder builder)
        where TStateObject : StateObject
    {
        ArgumentNullException.ThrowIfNull(builder);
        AddCommon<TStateObject>(builder, $"AddGrpcInterceptors<{typeof(TStateObject).Name}>()");
        builder.Services.AddGrpc(options => options.Interceptors.Add<DseServerInterceptor<TStateObject>>());
        return builder;
    }

    /// <summary>
    /// Makes the gRPC service <typeparamref name="TService"/> alone speculative on behalf of the StateObject registered
    /// as <typeparamref name="TStateObject"/>; other services of the host stay as they are (for example written in
    /// manual mode with <see cref="DseManualCall"/>, or on another StateObject). The host's start fails if no
    /// StateObject is registered as <typeparamref name="TStateObject"/>.
    /// </summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder AddGrpcInterceptors<TService, TStateObject>(this IDseBuilder builder)
        where TService : class
        where TStateObject : StateObject
    {
        ArgumentNullException.ThrowIfNull(builder);
        AddCommon<TStateObject>(builder, $"AddGrpcInterceptors<{typeof(TService).Name}, {typeof(TStateObject).Name}>()");
        builder.Services.AddGrpc().AddServiceOptions<TService>(options => options.Interceptors.Add<DseServerInterceptor<TStateObject>>());
        return builder;
    }

    /// <summary>
    /// Registers the <see cref="DseClientInterceptor"/> singleton for outgoing calls (with <c>Dse:Token</c>, and a logger),
    /// unless one is registered already. <see cref="AddGrpcInterceptors{TStateObject}"/> does this too; call it when a host
    /// makes DSE calls without serving through the interceptor (a service in manual mode, a workflow engine).
    /// </summary>
    /// <returns>The builder.</returns>
    public static IDseBuilder AddDseClientInterceptor(this IDseBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.TryAddSingleton(DseServiceIdentity.ClientInterceptor);
        return builder;
    }

    private static void AddCommon<TStateObject>(IDseBuilder builder, string registration)
        where TStateObject : StateObject
    {
        // Checked when the host starts (the StateObject may be registered after this call).
        DseRegistry.Of(builder).InterceptorOwners.Add((typeof(TStateObject), registration));
        builder.AddDseClientInterceptor();
        builder.Services.TryAddSingleton<DseServerInterceptor<TStateObject>>();
    }
}
