using Dse.Testing;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Hosting.Tests;

/// <summary>Builds a real generic host over in-memory configuration; given a <see cref="LogCapture"/>, every log entry from Debug on is recorded in it.</summary>
internal static class TestHost
{
    /// <summary>Builds the host; <paramref name="before"/> registers services ahead of <c>AddDse</c>.</summary>
    public static IHost Build(IDictionary<string, string?> configuration, Action<IDseBuilder> configure, LogCapture? logs = null, Action<IServiceCollection>? before = null)
    {
        var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Configuration.AddInMemoryCollection(configuration);
        builder.Logging.ClearProviders();
        if (logs is not null)
        {
            builder.Logging.AddProvider(logs);
            builder.Logging.SetMinimumLevel(LogLevel.Debug);
        }

        before?.Invoke(builder.Services);
        configure(builder.Services.AddDse().AddHealthChecks());
        return builder.Build();
    }

    /// <summary>A host with one <see cref="CounterStateObject"/> over <paramref name="storage"/>, id from <c>Dse:ObjectId</c>.</summary>
    public static async Task<IHost> BuildCounterAsync(CounterStorage storage, IDictionary<string, string?> configuration, Action<IDseBuilder>? configure = null, LogCapture? logs = null)
    {
        var log = await storage.OpenAsync();
        return Build(configuration, dse =>
        {
            dse.AddStateObject((_, options) => new CounterStateObject(options, log));
            configure?.Invoke(dse);
        }, logs);
    }

    /// <summary>Starts the host, waits until its StateObjects connected, and returns the <see cref="CounterStateObject"/>.</summary>
    public static async Task<CounterStateObject> StartCounterAsync(this IHost host)
    {
        await host.StartAsync();
        await host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        return host.Services.GetRequiredService<CounterStateObject>();
    }

    public static Dictionary<string, string?> Config(params (string Key, string? Value)[] entries)
    {
        var config = new Dictionary<string, string?> { ["Dse:ObjectId"] = "1" };
        foreach (var (key, value) in entries)
        {
            config[key] = value;
        }

        return config;
    }
}
