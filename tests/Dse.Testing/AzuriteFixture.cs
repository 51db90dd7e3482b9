using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Azure.Storage.Blobs;
using DotNet.Testcontainers.Builders;
using DotNet.Testcontainers.Containers;

namespace Dse.Testing;

/// <summary>
/// An Azurite blob endpoint shared by the tests of a collection (each test assembly declares its own collection
/// definition over this fixture, since xunit only finds definitions in the test assembly). In order of preference:
/// <list type="number">
/// <item><description><c>DSE_TEST_AZURITE_CONNECTION_STRING</c>, when set (an emulator someone else runs);</description></item>
/// <item><description>the Azurite image through Testcontainers, when a Docker engine is reachable;</description></item>
/// <item><description>the Azurite pinned in tools/azurite (npm), started on 127.0.0.1 with a free port and a temp data folder,
/// installed with <c>npm ci</c> first when node_modules is missing.</description></item>
/// </list>
/// </summary>
public sealed class AzuriteFixture : IAsyncLifetime
{
    /// <summary>The emulator's well-known development account (public, documented, not a secret).</summary>
    public const string AccountName = "devstoreaccount1";

    public const string AccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    public const string ConnectionStringVariable = "DSE_TEST_AZURITE_CONNECTION_STRING";

    private const string Image = "mcr.microsoft.com/azure-storage/azurite:3.35.0";
    private const int BlobPort = 10000;

    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan NpmTimeout = TimeSpan.FromMinutes(5);

    private readonly StringBuilder _output = new();
    private IContainer? _container;
    private Process? _process;
    private string? _dataDirectory;

    /// <summary>Connection string of the running endpoint.</summary>
    public string ConnectionString { get; private set; } = string.Empty;

    /// <summary>How the endpoint was obtained: "external", "docker" or "local".</summary>
    public string Mode { get; private set; } = string.Empty;

    public static string ConnectionStringFor(string host, int port)
        => $"DefaultEndpointsProtocol=http;AccountName={AccountName};AccountKey={AccountKey};BlobEndpoint=http://{host}:{port}/{AccountName};";

    public async Task InitializeAsync()
    {
        string? external = Environment.GetEnvironmentVariable(ConnectionStringVariable);
        if (!string.IsNullOrWhiteSpace(external))
        {
            ConnectionString = external;
            Mode = "external";
        }
        else if (!await TryStartContainerAsync())
        {
            await StartLocalAsync();
            Mode = "local";
        }
        else
        {
            Mode = "docker";
        }

        await ProbeServiceAsync();
    }

    public async Task DisposeAsync()
    {
        if (_container is not null)
        {
            await _container.DisposeAsync();
        }

        await StopLocalAsync();
    }

    /// <summary>Whether a Docker engine endpoint is configured or present at the default socket.</summary>
    private static bool DockerEndpointLikely()
        => !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("DOCKER_HOST"))
           || (!OperatingSystem.IsWindows() && File.Exists("/var/run/docker.sock"))
           || (OperatingSystem.IsWindows() && File.Exists(@"\\.\pipe\docker_engine"));

    private static string FindToolDirectory()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            string candidate = Path.Combine(directory.FullName, "tools", "azurite");
            if (File.Exists(Path.Combine(candidate, "package.json")))
            {
                return candidate;
            }
        }

        throw new InvalidOperationException($"tools/azurite/package.json not found above {AppContext.BaseDirectory}.");
    }

    private static int GetFreePort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    /// <summary>
    /// Installs Azurite from the lock file if it is missing. Test processes running at once (one per test assembly)
    /// serialize on a named cross-process mutex: a blocking wait on a dedicated thread, no polling.
    /// </summary>
    private static Task EnsureInstalledAsync(string toolDirectory, string executable) => File.Exists(executable)
        ? Task.CompletedTask
        : Task.Factory.StartNew(() => InstallUnderMutex(toolDirectory, executable), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);

    private static void InstallUnderMutex(string toolDirectory, string executable)
    {
        using var mutex = new Mutex(initiallyOwned: false, @"Global\dse-azurite-npm-ci");
        try
        {
            if (!mutex.WaitOne(NpmTimeout + TimeSpan.FromMinutes(1)))
            {
                throw new TimeoutException($"Another test process held the Azurite install lock for longer than {NpmTimeout + TimeSpan.FromMinutes(1)}.");
            }
        }
        catch (AbandonedMutexException)
        {
            // The previous holder died mid-install; we own the mutex now and npm ci starts over cleanly.
        }

        try
        {
            if (File.Exists(executable))
            {
                return;
            }

            var start = new ProcessStartInfo(OperatingSystem.IsWindows() ? "npm.cmd" : "npm")
            {
                WorkingDirectory = toolDirectory,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            foreach (string argument in new[] { "ci", "--no-audit", "--no-fund" })
            {
                start.ArgumentList.Add(argument);
            }

            using var npm = Process.Start(start) ?? throw new InvalidOperationException("Could not start npm.");
            var stdout = npm.StandardOutput.ReadToEndAsync();
            var stderr = npm.StandardError.ReadToEndAsync();
            if (!npm.WaitForExit(NpmTimeout))
            {
                npm.Kill(entireProcessTree: true);
                throw new TimeoutException($"npm ci in {toolDirectory} did not finish within {NpmTimeout}.");
            }

            if (npm.ExitCode != 0 || !File.Exists(executable))
            {
                throw new InvalidOperationException(
                    $"npm ci in {toolDirectory} failed with exit code {npm.ExitCode}:\n{stdout.GetAwaiter().GetResult()}\n{stderr.GetAwaiter().GetResult()}");
            }
        }
        finally
        {
            mutex.ReleaseMutex();
        }
    }

    private async Task<bool> TryStartContainerAsync()
    {
        if (!DockerEndpointLikely())
        {
            return false;
        }

        IContainer? container = null;
        try
        {
            container = new ContainerBuilder(Image)
                .WithCommand("azurite-blob", "--blobHost", "0.0.0.0", "--blobPort", BlobPort.ToString(System.Globalization.CultureInfo.InvariantCulture),
                    "--skipApiVersionCheck", "--loose", "--disableTelemetry")
                .WithPortBinding(BlobPort, assignRandomHostPort: true)
                .WithWaitStrategy(Wait.ForUnixContainer().UntilInternalTcpPortIsAvailable(BlobPort))
                .Build();
            using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(3));
            await container.StartAsync(timeout.Token);
            ConnectionString = ConnectionStringFor(container.Hostname, container.GetMappedPublicPort(BlobPort));
            _container = container;
            return true;
        }
        catch (Exception ex)
        {
            // The socket exists but Testcontainers cannot use it (no daemon, no permission, no image): run Azurite locally.
            _output.AppendLine($"Docker path failed, using local Azurite: {ex.GetType().Name}: {ex.Message}");
            if (container is not null)
            {
                await container.DisposeAsync();
            }

            return false;
        }
    }

    private async Task StartLocalAsync()
    {
        string toolDirectory = FindToolDirectory();
        string executable = Path.Combine(toolDirectory, "node_modules", ".bin", OperatingSystem.IsWindows() ? "azurite-blob.cmd" : "azurite-blob");
        await EnsureInstalledAsync(toolDirectory, executable);

        // The free port can be taken between probing and Azurite's bind; then Azurite exits and we try another one.
        for (int attempt = 1; attempt <= 3; attempt++)
        {
            int port = GetFreePort();
            _dataDirectory = Directory.CreateTempSubdirectory("dse-azurite-").FullName;
            var start = new ProcessStartInfo(executable)
            {
                WorkingDirectory = toolDirectory,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            foreach (string argument in new[]
            {
                "--blobHost", "127.0.0.1", "--blobPort", port.ToString(System.Globalization.CultureInfo.InvariantCulture),
                "--location", _dataDirectory, "--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry",
            })
            {
                start.ArgumentList.Add(argument);
            }

            _listening = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            string announcement = $"successfully listens on http://127.0.0.1:{port.ToString(System.Globalization.CultureInfo.InvariantCulture)}";
            _process = new Process { StartInfo = start };
            _process.OutputDataReceived += (_, e) =>
            {
                AppendOutput(e.Data);
                if (e.Data?.Contains(announcement, StringComparison.Ordinal) == true)
                {
                    _listening.TrySetResult();
                }
            };
            _process.ErrorDataReceived += (_, e) => AppendOutput(e.Data);
            _process.Start();
            _process.BeginOutputReadLine();
            _process.BeginErrorReadLine();

            if (await WaitUntilListeningAsync(_process))
            {
                ConnectionString = ConnectionStringFor("127.0.0.1", port);
                return;
            }

            await StopLocalAsync();
        }

        string output;
        lock (_output)
        {
            output = _output.ToString();
        }

        throw new InvalidOperationException($"Local Azurite did not start after 3 attempts. Output:\n{output}");
    }

    /// <summary>
    /// Waits for Azurite's own announcement that it listens (an event on its stdout, no polling), for it to exit, or for
    /// the start timeout.
    /// </summary>
    private async Task<bool> WaitUntilListeningAsync(Process process)
    {
        var listening = _listening!;
        try
        {
            await Task.WhenAny(listening.Task, process.WaitForExitAsync()).WaitAsync(StartTimeout).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            return false;
        }

        return listening.Task.IsCompleted && !process.HasExited;
    }

    // Completed when the running Azurite process announces that it listens.
    private TaskCompletionSource? _listening;

    private void AppendOutput(string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (_output)
        {
            _output.AppendLine(line);
        }
    }

    /// <summary>One real request, so that a fixture that "started" but cannot serve fails here with a clear message.</summary>
    private async Task ProbeServiceAsync()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var service = new BlobServiceClient(ConnectionString);
        await foreach (var _ in service.GetBlobContainersAsync(cancellationToken: timeout.Token))
        {
            break;
        }
    }

    private async Task StopLocalAsync()
    {
        if (_process is not null)
        {
            try
            {
                if (!_process.HasExited)
                {
                    _process.Kill(entireProcessTree: true);
                    using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
                    await _process.WaitForExitAsync(timeout.Token);
                }
            }
            catch (Exception ex) when (ex is InvalidOperationException or OperationCanceledException)
            {
                // Already gone, or it did not die in time; nothing more a test fixture can do.
            }

            _process.Dispose();
            _process = null;
        }

        if (_dataDirectory is not null)
        {
            try
            {
                Directory.Delete(_dataDirectory, recursive: true);
            }
            catch (IOException)
            {
            }

            _dataDirectory = null;
        }
    }
}
