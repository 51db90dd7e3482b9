using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Dse.Samples.Shared;

/// <summary>
/// One process of the cluster: this program started in a mode (<c>dotnet exec TwoPhaseCommit.dll MODE ...</c>). It
/// announces its address with one standard output line, <see cref="Announcement"/> followed by the URL; its standard
/// error goes to a file. It exits when its standard input closes, so it never outlives the launcher; disposing kills
/// its process tree.
/// </summary>
internal sealed class ChildProcess : IAsyncDisposable
{
    /// <summary>The line a child prints once it serves: this, then its URL.</summary>
    public const string Announcement = "listening on ";

    private const int ErrorTailLines = 20;

    private readonly Process _process;
    private readonly TaskCompletionSource<Uri> _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Queue<string> _errorTail = new();
    private readonly Task _outputPump;
    private readonly Task _errorPump;

    private ChildProcess(string name, Process process, string errorLog)
    {
        Name = name;
        _process = process;
        ErrorLog = errorLog;
        _errorPump = PumpErrorsAsync();
        _outputPump = PumpOutputAsync();
    }

    /// <summary>A name for messages, for example <c>participant-2</c>.</summary>
    public string Name { get; }

    /// <summary>The file holding the process's standard error.</summary>
    public string ErrorLog { get; }

    /// <summary>Whether the process has exited.</summary>
    public bool HasExited => _process.HasExited;

    /// <summary>
    /// Starts this program in <paramref name="mode"/> with <paramref name="arguments"/>; <paramref name="tieredPgo"/>
    /// sets the runtime's tiered profile-guided optimization on or off in it.
    /// </summary>
    public static ChildProcess Start(string name, string mode, IEnumerable<string> arguments, string errorLog, bool tieredPgo = false)
    {
        string assembly = typeof(ChildProcess).Assembly.Location;
        var start = new ProcessStartInfo(DotnetMuxer())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        string runtimeConfig = Path.ChangeExtension(assembly, ".runtimeconfig.json");
        if (File.Exists(runtimeConfig))
        {
            start.ArgumentList.Add("--runtimeconfig");
            start.ArgumentList.Add(runtimeConfig);
        }

        start.ArgumentList.Add(assembly);
        start.ArgumentList.Add(mode);
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        // Workstation GC: six processes share the machine. Tiered PGO only when asked (TwoPhaseCommitOptions.TieredPgo).
        start.Environment["DOTNET_gcServer"] = "0";
        start.Environment["DOTNET_TieredPGO"] = tieredPgo ? "1" : "0";
        var process = Process.Start(start) ?? throw new InvalidOperationException($"Could not start {name}.");
        return new ChildProcess(name, process, errorLog);
    }

    /// <summary>Completes with the process's address once it announced it; fails if it exits first or within <paramref name="timeout"/>.</summary>
    public async Task<Uri> WaitUntilReadyAsync(TimeSpan timeout, CancellationToken cancellationToken)
    {
        try
        {
            return await _ready.Task.WaitAsync(timeout, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw new InvalidOperationException($"{Name} did not announce its address within {timeout.TotalSeconds} s. {Describe()}");
        }
    }

    /// <summary>Kills the process tree at once (SIGKILL: no shutdown, like a crash) and waits for the exit.</summary>
    public async Task KillAsync()
    {
        try
        {
            _process.Kill(entireProcessTree: true);
        }
        catch (InvalidOperationException)
        {
            // Exited already.
        }

        await _process.WaitForExitAsync().ConfigureAwait(false);
    }

    /// <summary>The exit state and the last lines of standard error, for failure messages.</summary>
    public string Describe()
    {
        string state = _process.HasExited ? $"exited with code {_process.ExitCode}" : "running";
        lock (_errorTail)
        {
            return $"{Name} (pid {_process.Id}) {state}; standard error in {ErrorLog}:{Environment.NewLine}    {string.Join(Environment.NewLine + "    ", _errorTail)}";
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await KillAsync().ConfigureAwait(false);
        await Task.WhenAll(_outputPump, _errorPump).ConfigureAwait(false);
        _process.Dispose();
    }

    /// <summary>The muxer that runs this program: the <c>dotnet</c> next to the running runtime, or the one on the PATH.</summary>
    private static string DotnetMuxer()
    {
        string name = OperatingSystem.IsWindows() ? "dotnet.exe" : "dotnet";
        string beside = Path.GetFullPath(Path.Combine(RuntimeEnvironment.GetRuntimeDirectory(), "..", "..", "..", name));
        return File.Exists(beside) ? beside : name;
    }

    private async Task PumpOutputAsync()
    {
        try
        {
            while (await _process.StandardOutput.ReadLineAsync().ConfigureAwait(false) is { } line)
            {
                if (line.StartsWith(Announcement, StringComparison.Ordinal) && Uri.TryCreate(line[Announcement.Length..].Trim(), UriKind.Absolute, out var address))
                {
                    _ready.TrySetResult(address);
                }
            }
        }
        finally
        {
            await _errorPump.ConfigureAwait(false);
            _ready.TrySetException(new InvalidOperationException($"{Name} exited before announcing its address. {Describe()}"));
        }
    }

    private async Task PumpErrorsAsync()
    {
        // Always drained: a child blocked on a full standard error pipe would stall.
        Directory.CreateDirectory(Path.GetDirectoryName(ErrorLog)!);
        // Flushed line by line: the file is where a user reads a running process's warnings and address.
        await using var file = new StreamWriter(ErrorLog, append: true) { AutoFlush = true };
        while (await _process.StandardError.ReadLineAsync().ConfigureAwait(false) is { } line)
        {
            await file.WriteLineAsync(line).ConfigureAwait(false);
            lock (_errorTail)
            {
                _errorTail.Enqueue(line);
                if (_errorTail.Count > ErrorTailLines)
                {
                    _errorTail.Dequeue();
                }
            }
        }
    }
}
