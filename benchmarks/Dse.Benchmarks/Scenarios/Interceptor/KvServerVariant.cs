namespace Dse.Benchmarks.Scenarios.Interceptor;

/// <summary>The three servers the interceptor scenario compares.</summary>
internal enum KvServerVariant
{
    /// <summary>A thin gRPC wrapper over FasterKV, no DSE.</summary>
    NoDse,

    /// <summary>ManualSpeculativeKvService: DSE written by hand, no interceptor.</summary>
    Manual,

    /// <summary>SpeculativeKvService behind DseServerInterceptor.</summary>
    Interceptor,
}
