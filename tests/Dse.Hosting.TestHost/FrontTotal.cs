using Dse.Storage;

namespace Dse.Hosting.TestHost;

/// <summary>The Front service's state (StateObject <see cref="Ids.Front"/>).</summary>
internal sealed class FrontTotal(DseOptions options, SnapshotLog log) : TotalState(options, log);
