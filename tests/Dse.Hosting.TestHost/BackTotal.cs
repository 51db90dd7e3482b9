using Dse.Storage;

namespace Dse.Hosting.TestHost;

/// <summary>The Back service's state (StateObject <see cref="Ids.Back"/>).</summary>
internal sealed class BackTotal(DseOptions options, SnapshotLog log) : TotalState(options, log);
