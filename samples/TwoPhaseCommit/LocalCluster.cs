using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using Dse.Samples.Shared;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// A whole 2PC cluster as child processes on 127.0.0.1, each on a free port with its storage in its own folder of
/// <see cref="Directory"/>: the DSE coordinator, four participants (DSE ids 2-5) and the committer (id 1). A
/// participant can be killed (SIGKILL) and restarted on the same port and storage.
/// </summary>
public sealed class LocalCluster : IAsyncDisposable
{
    /// <summary>The committer's DSE id; participants follow it.</summary>
    public const long CommitterId = 1;

    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(120);

    private readonly ChildProcess?[] _participants;
    private readonly Uri[] _participantAddresses;
    private readonly bool _speculative;
    private readonly TimeSpan _groupCommit;
    private readonly bool _tieredPgo;
    private readonly ClusterTls? _tls;
    private ChildProcess? _coordinator;
    private ChildProcess? _committer;
    private int _starts;

    private LocalCluster(string directory, int participants, bool speculative, TimeSpan groupCommit, bool tieredPgo, ClusterTls? tls)
    {
        _tls = tls;
        CertificateAuthority = tls?.LoadAuthority();
        Directory = directory;
        _participants = new ChildProcess?[participants];
        _participantAddresses = new Uri[participants];
        _speculative = speculative;
        _groupCommit = groupCommit;
        _tieredPgo = tieredPgo;
    }

    /// <summary>The folder with every process's storage and standard error.</summary>
    public string Directory { get; }

    /// <summary>The CA every process's certificate chains to, with TLS; <c>null</c> for plaintext on loopback.</summary>
    public X509Certificate2? CertificateAuthority { get; }

    /// <summary>The DSE coordinator's address.</summary>
    public Uri CoordinatorAddress { get; private set; } = null!;

    /// <summary>The committer's address.</summary>
    public Uri CommitterAddress { get; private set; } = null!;

    /// <summary>The participants' addresses, in order; a restarted participant keeps its address.</summary>
    public IReadOnlyList<Uri> ParticipantAddresses => _participantAddresses;

    /// <summary>
    /// Starts the cluster in <paramref name="directory"/> (created if missing; it should be empty) and returns once
    /// every process is connected and serving. <paramref name="tieredPgo"/> turns the runtime's tiered profile-guided
    /// optimization on in every process (see <see cref="TwoPhaseCommitOptions.TieredPgo"/>). With <paramref name="tls"/>
    /// every process serves TLS with a certificate of a throwaway CA made in <paramref name="directory"/>
    /// (<see cref="ClusterTls"/>).
    /// </summary>
    public static async Task<LocalCluster> StartAsync(string directory, bool speculative, TimeSpan groupCommit, int participants = 4, bool tieredPgo = false, bool tls = false, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(participants);
        System.IO.Directory.CreateDirectory(directory);
        var cluster = new LocalCluster(directory, participants, speculative, groupCommit, tieredPgo, tls ? ClusterTls.Create(Path.Combine(directory, "tls")) : null);
        try
        {
            cluster._coordinator = cluster.Launch("dse-coordinator", CoordinatorHost.Mode,
                ["--port", "0", "--log", Path.Combine(directory, "dse-coordinator", "coordinator.log"), .. cluster.TlsArguments()]);
            cluster.CoordinatorAddress = await cluster._coordinator.WaitUntilReadyAsync(StartTimeout, cancellationToken).ConfigureAwait(false);

            var ready = new Task<Uri>[participants];
            for (int i = 0; i < participants; i++)
            {
                var child = cluster.LaunchParticipant(i, port: 0);
                cluster._participants[i] = child;
                ready[i] = child.WaitUntilReadyAsync(StartTimeout, cancellationToken);
            }

            for (int i = 0; i < participants; i++)
            {
                cluster._participantAddresses[i] = await ready[i].ConfigureAwait(false);
            }

            cluster._committer = cluster.Launch("committer", ServerHost.Committer,
            [
                .. cluster.ServerArguments(CommitterId, 0, "committer"),
                "--participants", string.Join(',', cluster._participantAddresses.Select(a => a.ToString().TrimEnd('/'))),
            ]);
            cluster.CommitterAddress = await cluster._committer.WaitUntilReadyAsync(StartTimeout, cancellationToken).ConfigureAwait(false);
            return cluster;
        }
        catch
        {
            await cluster.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// Kills participant <paramref name="index"/> with SIGKILL (everything it had not persisted is lost), restarts it
    /// on the same port and storage, and returns once it has recovered (the coordinator rolled the cluster back to a
    /// consistent cut) and serves again.
    /// </summary>
    public async Task KillAndRestartParticipantAsync(int index, CancellationToken cancellationToken = default)
    {
        var old = _participants[index] ?? throw new InvalidOperationException($"Participant {index} is not running.");
        await old.KillAsync().ConfigureAwait(false);
        await old.DisposeAsync().ConfigureAwait(false);
        var restarted = LaunchParticipant(index, _participantAddresses[index].Port);
        _participants[index] = restarted;
        await restarted.WaitUntilReadyAsync(StartTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Describes every process (state and standard error tail), for failure messages.</summary>
    public string Describe() => string.Join(Environment.NewLine, new[] { _coordinator, _committer }.Concat(_participants).OfType<ChildProcess>().Select(c => c.Describe()));

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        CertificateAuthority?.Dispose();
        foreach (var child in new[] { _committer }.Concat(_participants).Append(_coordinator))
        {
            if (child is not null)
            {
                await child.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    private ChildProcess LaunchParticipant(int index, int port)
    {
        long id = CommitterId + 1 + index;
        string name = $"participant-{index}";
        return Launch(name, ServerHost.Participant, ServerArguments(id, port, name));
    }

    private string[] ServerArguments(long id, int port, string name) =>
    [
        "--id", id.ToString(CultureInfo.InvariantCulture),
        "--port", port.ToString(CultureInfo.InvariantCulture),
        "--data", Path.Combine(Directory, name),
        "--coordinator", CoordinatorAddress.ToString().TrimEnd('/'),
        "--group-commit-ms", ((long)_groupCommit.TotalMilliseconds).ToString(CultureInfo.InvariantCulture),
        "--speculative", _speculative ? "true" : "false",
        .. TlsArguments(),
    ];

    private string[] TlsArguments() => _tls is null ? [] : ["--tls-cert", _tls.CertificatePath, "--tls-key", _tls.KeyPath, "--tls-ca", _tls.AuthorityPath];

    private ChildProcess Launch(string name, string mode, IEnumerable<string> arguments)
    {
        int start = Interlocked.Increment(ref _starts);
        return ChildProcess.Start(name, mode, arguments, Path.Combine(Directory, "logs", $"{name}.{start}.stderr"), _tieredPgo);
    }
}
