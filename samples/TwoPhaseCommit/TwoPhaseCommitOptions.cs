namespace Dse.Samples.TwoPhaseCommit;

/// <summary>What a <see cref="TwoPhaseCommitRun"/> does. Validated when the run starts.</summary>
public sealed class TwoPhaseCommitOptions
{
    /// <summary>Transactions per mode in the libDSE paper's run (the benchmark's size, the sample's <c>--full</c>).</summary>
    public const int PaperTransactions = 30000;

    /// <summary>
    /// Transactions per run (per mode). Default 2000: a run of both modes that ends within about a minute on a shared
    /// 2-core machine and still shows the speculative mode's lower latency; <see cref="PaperTransactions"/> for the
    /// paper's run.
    /// </summary>
    public int Transactions { get; set; } = 2000;

    /// <summary>
    /// Transactions each run sends before it measures (JIT, connections, the first group commits); checked, not
    /// measured. Default null: a fifth of <see cref="Transactions"/>, at least 10 and at most 200.
    /// </summary>
    public int? WarmUpTransactions { get; set; }

    /// <summary>The warm-up size this run uses: <see cref="WarmUpTransactions"/>, or its default.</summary>
    public int EffectiveWarmUpTransactions => WarmUpTransactions ?? Math.Clamp(Transactions / 5, 10, 200);

    /// <summary>Concurrent closed-loop clients. Default 8.</summary>
    public int Clients { get; set; } = 8;

    /// <summary>Every log's group-commit period. Default 10 ms; whole milliseconds from 1 to 10000.</summary>
    public TimeSpan GroupCommit { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>
    /// Whether the cluster's processes run with the runtime's tiered profile-guided optimization (<c>DOTNET_TieredPGO</c>).
    /// Default false: six processes JIT on a few cores at once, and the instrumented tier and the second JIT it leads to
    /// keep a short run's measured transactions slow for seconds after its warm-up, which stretches the run and makes
    /// the ratio of the two modes swing. True for a long run that measures steady state, where profile-guided code is
    /// what a long-running service runs (the paper-sized benchmark, <c>--full</c>).
    /// </summary>
    public bool TieredPgo { get; set; }

    /// <summary>
    /// Whether every process serves gRPC over TLS: the launcher makes a throwaway certificate authority and a server
    /// certificate for 127.0.0.1 in each run's folder, and every client trusts that CA only. Default false: plaintext
    /// HTTP/2 on loopback, which is for development on one machine.
    /// </summary>
    public bool Tls { get; set; }

    /// <summary>Which runs to perform. Default <see cref="TwoPhaseCommitMode.Both"/>.</summary>
    public TwoPhaseCommitMode Mode { get; set; } = TwoPhaseCommitMode.Both;

    /// <summary>
    /// Whether to kill -9 one participant at a random moment of the speculative run (of the non-speculative run if
    /// that is the only one) and restart it on its port and storage. Default false.
    /// </summary>
    public bool Chaos { get; set; }

    /// <summary>
    /// Whether to send every participant a Begin with each kind of forged DSE header in the middle of each run
    /// (<see cref="ForgedHeaders"/>): the implausible ones must be refused, and the run must still commit every
    /// transaction with no atomicity violation. Default false.
    /// </summary>
    public bool Forge { get; set; }

    /// <summary>The seed of the chaos (which participant, when). Default null: chosen at random and reported.</summary>
    public int? Seed { get; set; }

    /// <summary>
    /// Where the clusters keep their storage and logs (one subfolder per mode, emptied first), kept afterwards.
    /// Default null: a temp folder, deleted at the end.
    /// </summary>
    public string? DataDirectory { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (Transactions < 1)
        {
            throw new ArgumentException($"{nameof(Transactions)} must be positive (got {Transactions}).", nameof(Transactions));
        }

        if (WarmUpTransactions is < 0)
        {
            throw new ArgumentException($"{nameof(WarmUpTransactions)} must not be negative (got {WarmUpTransactions}).", nameof(WarmUpTransactions));
        }

        if (Clients < 1 || Clients > 1024)
        {
            throw new ArgumentException($"{nameof(Clients)} must be between 1 and 1024 (got {Clients}).", nameof(Clients));
        }

        if (GroupCommit < TimeSpan.FromMilliseconds(1) || GroupCommit > TimeSpan.FromSeconds(10) || GroupCommit.Ticks % TimeSpan.TicksPerMillisecond != 0)
        {
            throw new ArgumentException($"{nameof(GroupCommit)} must be whole milliseconds between 1 ms and 10 s (got {GroupCommit.TotalMilliseconds} ms).", nameof(GroupCommit));
        }

        if (!Enum.IsDefined(Mode))
        {
            throw new ArgumentException($"{nameof(Mode)} {Mode} is not a mode.", nameof(Mode));
        }
    }
}
