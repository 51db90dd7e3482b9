using Dse.Coordinator.Client;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// Validates <see cref="DseHostingOptions"/> against the registered StateObjects, and the registrations themselves (an
/// interceptor needs its StateObject), when the host starts; every message names the configuration key or the
/// registration that is wrong.
/// </summary>
internal sealed class DseHostingOptionsValidator(DseRegistry registry, IServiceProviderIsService services) : IValidateOptions<DseHostingOptions>
{
    public ValidateOptionsResult Validate(string? name, DseHostingOptions options)
    {
        var failures = new List<string>();
        try
        {
            options.ParseCoordinator();
        }
        catch (ArgumentException ex)
        {
            failures.Add(ex.Message);
        }

        ValidateCoordinatorCa(options, failures);
        ValidateCoordinatorToken(options, failures);
        ValidateServiceIdentity(options, failures);

        if (options.ShutdownTimeout < TimeSpan.Zero || options.ShutdownTimeout > TimeSpan.FromHours(1))
        {
            failures.Add($"{DseHostingOptions.Key(nameof(DseHostingOptions.ShutdownTimeout))} must be between 0 and 1 hour (got {options.ShutdownTimeout}).");
        }

        if (options.MaxConnectRetryDelay < DseHostingOptions.FirstConnectRetryDelay || options.MaxConnectRetryDelay > TimeSpan.FromMinutes(10))
        {
            failures.Add($"{DseHostingOptions.Key(nameof(DseHostingOptions.MaxConnectRetryDelay))} must be between {DseHostingOptions.FirstConnectRetryDelay.TotalMilliseconds} ms and 10 minutes (got {options.MaxConnectRetryDelay}).");
        }

        ValidateTimeout(options.BarrierTimeout, nameof(DseHostingOptions.BarrierTimeout), TimeSpan.FromMilliseconds(10), failures);
        ValidateTimeout(options.CommitStallTimeout, nameof(DseHostingOptions.CommitStallTimeout), TimeSpan.FromMilliseconds(100), failures);

        // The runtime's own rules for what every StateObject gets; the id is checked per registration below.
        try
        {
            options.ToDseOptions(objectId: 0, loggerFactory: null, TimeProvider.System).Validate();
        }
        catch (ArgumentException ex)
        {
            failures.Add($"{DseHostingOptions.Key(ex.ParamName ?? "?")} is invalid: {ex.Message}");
        }

        ValidateIds(options, failures);
        ValidateExpectedParticipants(options, failures);
        ValidateInterceptorOwners(failures);
        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }

    /// <summary>A bound between <paramref name="min"/> and 1 hour, or <see cref="Timeout.InfiniteTimeSpan"/> for none.</summary>
    private static void ValidateTimeout(TimeSpan value, string name, TimeSpan min, List<string> failures)
    {
        if (value != Timeout.InfiniteTimeSpan && (value < min || value > TimeSpan.FromHours(1)))
        {
            failures.Add($"{DseHostingOptions.Key(name)} must be between {min.TotalMilliseconds} ms and 1 hour, or -00:00:00.001 for no bound (got {value}).");
        }
    }

    private static void ValidateCoordinatorCa(DseHostingOptions options, List<string> failures)
    {
        if (options.CoordinatorCa is not { } path)
        {
            return;
        }

        string key = DseHostingOptions.Key(nameof(DseHostingOptions.CoordinatorCa));
        Uri? address = null;
        try
        {
            address = options.ParseCoordinator();
        }
        catch (ArgumentException)
        {
            // Reported for Dse:Coordinator.
            return;
        }

        if (address is null || address.Scheme != Uri.UriSchemeHttps)
        {
            failures.Add($"{key} applies to an https coordinator only (Dse:Coordinator is \"{options.Coordinator}\").");
        }
        else if (!File.Exists(path))
        {
            failures.Add($"{key} names no file (got \"{path}\"): it must be the PEM certificate of the CA that signed the coordinator's certificate.");
        }
    }

    /// <summary>The token's own checks; a refusal names the key, never the token.</summary>
    private static void ValidateCoordinatorToken(DseHostingOptions options, List<string> failures)
    {
        if (options.CoordinatorToken is null && options.CoordinatorTokenFile is null)
        {
            return;
        }

        string tokenKey = DseHostingOptions.Key(nameof(DseHostingOptions.CoordinatorToken));
        string fileKey = DseHostingOptions.Key(nameof(DseHostingOptions.CoordinatorTokenFile));
        if (options.CoordinatorToken is not null && options.CoordinatorTokenFile is not null)
        {
            failures.Add($"Set {tokenKey} or {fileKey}, not both.");
            return;
        }

        if (!IsRemote(options))
        {
            failures.Add($"{(options.CoordinatorToken is null ? fileKey : tokenKey)} applies to a remote coordinator only (Dse:Coordinator is \"{options.Coordinator}\").");
            return;
        }

        try
        {
            new GrpcCoordinatorClientOptions { Token = options.CoordinatorToken, TokenPath = options.CoordinatorTokenFile }.Validate();
        }
        catch (ArgumentException ex)
        {
            failures.Add(ex.Message.Replace($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(GrpcCoordinatorClientOptions.TokenPath)}", fileKey, StringComparison.Ordinal)
                .Replace($"{nameof(GrpcCoordinatorClientOptions)}.{nameof(GrpcCoordinatorClientOptions.Token)}", tokenKey, StringComparison.Ordinal));
        }
    }

    /// <summary><c>Dse:Participants</c> parses, the opt-in has a file to qualify, and <c>Dse:Token</c> can be sent; never echoing a token or a line.</summary>
    private static void ValidateServiceIdentity(DseHostingOptions options, List<string> failures)
    {
        if (options.Participants is not null)
        {
            try
            {
                DseServiceIdentity.LoadParticipants(options);
            }
            catch (ArgumentException ex)
            {
                failures.Add(ex.Message);
            }
        }
        else if (options.AcceptUnauthenticatedHeaders)
        {
            failures.Add($"{DseHostingOptions.Key(nameof(DseHostingOptions.AcceptUnauthenticatedHeaders))} applies only with {DseHostingOptions.Key(nameof(DseHostingOptions.Participants))}: without a participants file every header is accepted already.");
        }

        try
        {
            DseServiceIdentity.ReadToken(options);
        }
        catch (ArgumentException ex)
        {
            failures.Add(ex.Message);
        }
    }

    private static bool IsRemote(DseHostingOptions options)
    {
        try
        {
            return options.ParseCoordinator() is not null;
        }
        catch (ArgumentException)
        {
            return true;   // reported once, by the coordinator's own check
        }
    }

    private void ValidateExpectedParticipants(DseHostingOptions options, List<string> failures)
    {
        if (options.ExpectedParticipants is not { } expected)
        {
            return;
        }

        string key = DseHostingOptions.Key(nameof(DseHostingOptions.ExpectedParticipants));
        if (!IsInProcess(options))
        {
            failures.Add($"{key} applies to the in-process coordinator only (Dse:Coordinator is \"{options.Coordinator}\"); a coordinator host sets its expected participants itself.");
            return;
        }

        if (expected.Count == 0)
        {
            failures.Add($"{key} must name at least one participant, or be left unset to expect the registered StateObjects.");
        }

        foreach (long id in expected)
        {
            if (id < 0)
            {
                failures.Add($"{key} must hold non-negative ids (got {id}).");
            }
        }

        foreach (var registration in registry.StateObjects)
        {
            long id = registration.EffectiveId(options);
            if (id >= 0 && !expected.Contains(id))
            {
                failures.Add($"{key} ({string.Join(", ", expected)}) must include {id}, the id of StateObject {registration.Describe()}: the coordinator would refuse it.");
            }
        }
    }

    /// <summary>Every StateObject type an interceptor was added for must resolve, or the first call would fail instead of the start.</summary>
    private void ValidateInterceptorOwners(List<string> failures)
    {
        foreach (var owner in registry.InterceptorOwners)
        {
            if (!services.IsService(owner.StateObjectType))
            {
                string registered = registry.StateObjects.Count == 0
                    ? "none is registered"
                    : $"registered: {string.Join(", ", registry.StateObjects.Select(static r => r.Describe()))}";
                failures.Add($"{owner.Registration} intercepts calls on behalf of a StateObject of type {owner.StateObjectType.Name}, but no StateObject is registered as that type ({registered}). Add it on the builder AddDse returns: .AddStateObject<{owner.StateObjectType.Name}>((services, options) => new {owner.StateObjectType.Name}(options, ...)), or intercept on behalf of a registered type.");
            }
        }
    }

    private static bool IsInProcess(DseHostingOptions options)
    {
        try
        {
            return options.ParseCoordinator() is null;
        }
        catch (ArgumentException)
        {
            return true;   // reported once, by the coordinator's own check
        }
    }

    private void ValidateIds(DseHostingOptions options, List<string> failures)
    {
        var seen = new Dictionary<long, DseStateObjectRegistration>();
        foreach (var registration in registry.StateObjects)
        {
            long id = registration.EffectiveId(options);
            if (id < 0)
            {
                failures.Add($"{DseHostingOptions.Key(nameof(DseHostingOptions.ObjectId))} must be set to a non-negative, cluster-unique id (got {id}): StateObject {registration.Type.Name} is registered without an id of its own.");
            }
            else if (!seen.TryAdd(id, registration))
            {
                failures.Add($"StateObjects {seen[id].Describe()} and {registration.Describe()} both have id {id}; each StateObject needs its own cluster-unique id (set {DseHostingOptions.Key(nameof(DseHostingOptions.ObjectId))} or pass objectId to AddStateObject).");
            }
        }
    }
}
