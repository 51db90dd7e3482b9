using System.Buffers;
using System.Globalization;
using System.Reflection;
using System.Text.Json;
using Dse.Coordinator.Client;
using Dse.Grpc;
using Grpc.Core;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Coordinator.Dashboard;

/// <summary>The dashboard's request handlers: the embedded page, the JSON snapshot, the event stream and the operator's removal.</summary>
internal sealed class DashboardEndpoints(DseDashboardOptions options)
{
    /// <summary>The page's content security policy: everything from this origin, nothing from anywhere else.</summary>
    public const string ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

    private static readonly Lazy<string> Page = new(() => System.Text.Encoding.UTF8.GetString(Asset("index.html")));
    private static readonly Lazy<byte[]> Script = new(() => Asset("dashboard.js"));
    private static readonly Lazy<byte[]> Style = new(() => Asset("dashboard.css"));

    // Resolved at the first request (the coordinator server opens when the host starts); read-only afterwards.
    private Resolved? _resolved;

    /// <summary>The page, with its base set to the dashboard's path so that its relative links resolve under it.</summary>
    public static Task PageAsync(HttpContext context, string prefix)
    {
        string baseHref = System.Net.WebUtility.HtmlEncode(context.Request.PathBase + prefix + "/");
        return SendAsync(context, System.Text.Encoding.UTF8.GetBytes(Page.Value.Replace("{{BASE}}", baseHref, StringComparison.Ordinal)), "text/html; charset=utf-8");
    }

    /// <summary>The page's script.</summary>
    public static Task ScriptAsync(HttpContext context) => SendAsync(context, Script.Value, "text/javascript; charset=utf-8");

    /// <summary>The page's style sheet.</summary>
    public static Task StyleAsync(HttpContext context) => SendAsync(context, Style.Value, "text/css; charset=utf-8");

    /// <summary>The view as one JSON object; <c>operator</c> names the operator when the request carries an operator's token.</summary>
    public async Task SnapshotAsync(HttpContext context)
    {
        var resolved = Resolve(context.RequestServices);
        string? operatorName = resolved.Credentials is { } credentials && Authenticate(context, credentials, out _) is { IsOperator: true } caller
            ? caller.OperatorName
            : null;
        var body = await RenderAsync(resolved, operatorName, "", "", context.RequestAborted).ConfigureAwait(false);
        NoStore(context);
        context.Response.ContentType = "application/json; charset=utf-8";
        await context.Response.Body.WriteAsync(body, context.RequestAborted).ConfigureAwait(false);
    }

    /// <summary>
    /// Server-sent events: the view (read-only: the event stream carries no operator) at once, then every
    /// <see cref="DseDashboardOptions.RefreshPeriod"/> until the client goes or the host stops.
    /// </summary>
    public async Task EventsAsync(HttpContext context)
    {
        var resolved = Resolve(context.RequestServices);
        var stopping = context.RequestServices.GetService<IHostApplicationLifetime>()?.ApplicationStopping ?? CancellationToken.None;
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted, stopping);
        var cancellationToken = linked.Token;

        NoStore(context);
        context.Response.ContentType = "text/event-stream";
        context.Response.Headers["X-Accel-Buffering"] = "no";
        context.Features.Get<IHttpResponseBodyFeature>()?.DisableBuffering();

        using var timer = new PeriodicTimer(options.RefreshPeriod);
        try
        {
            await context.Response.Body.WriteAsync("retry: 1000\n\n"u8.ToArray(), cancellationToken).ConfigureAwait(false);
            do
            {
                var body = await RenderAsync(resolved, null, "data: ", "\n\n", cancellationToken).ConfigureAwait(false);
                await context.Response.Body.WriteAsync(body, cancellationToken).ConfigureAwait(false);
                await context.Response.Body.FlushAsync(cancellationToken).ConfigureAwait(false);
            }
            while (await timer.WaitForNextTickAsync(cancellationToken).ConfigureAwait(false));
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The client went away, or the host stops: the stream just ends.
        }
    }

    /// <summary>
    /// The operator's removal of a participant: needs an operator's bearer token from the coordinator's participants file
    /// and <c>confirm=ID</c> naming the same participant. Answers 200 with <c>{"removed": bool}</c>; 401 without a valid
    /// token, 403 for a participant's token or a coordinator without credentials, 400 without the confirmation, 404 for
    /// an unknown participant, 503 when the coordinator stopped serving.
    /// </summary>
    public async Task RemoveAsync(HttpContext context, long id)
    {
        var resolved = Resolve(context.RequestServices);
        var logger = context.RequestServices.GetService<ILoggerFactory>()?.CreateLogger("Dse.Coordinator.Dashboard") ?? NullLogger.Instance;
        string peer = context.Connection.RemoteIpAddress?.ToString() ?? "unknown";
        NoStore(context);

        if (resolved.Local is null)
        {
            const string remoteReadOnly = "the dashboard is read-only: it shows a coordinator of another process (DseDashboardOptions.RemoteCoordinator); remove participants with dse remove or on the coordinator host's own dashboard";
            DashboardLogMessages.RemoveRefused(logger, id, peer, "remote coordinator");
            await ProblemAsync(context, StatusCodes.Status403Forbidden, remoteReadOnly).ConfigureAwait(false);
            return;
        }

        if (resolved.Credentials is not { } credentials)
        {
            const string readOnly = "the dashboard is read-only: the coordinator has no participants file, so no operator can authenticate (pass --participants to the host, or set DseDashboardOptions.Credentials)";
            DashboardLogMessages.RemoveRefused(logger, id, peer, "no participants file");
            await ProblemAsync(context, StatusCodes.Status403Forbidden, readOnly).ConfigureAwait(false);
            return;
        }

        var caller = Authenticate(context, credentials, out string reason);
        if (caller is null)
        {
            DashboardLogMessages.RemoveRefused(logger, id, peer, reason);
            context.Response.Headers.WWWAuthenticate = DseCredentials.Scheme;
            await ProblemAsync(context, StatusCodes.Status401Unauthorized, $"removing a participant needs an operator's token: {reason}").ConfigureAwait(false);
            return;
        }

        if (!caller.IsOperator)
        {
            DashboardLogMessages.RemoveRefused(logger, id, peer, $"{caller} is not an operator");
            await ProblemAsync(context, StatusCodes.Status403Forbidden, $"removing a participant is an operator action, and the token authenticates {caller}").ConfigureAwait(false);
            return;
        }

        string? confirm = context.Request.Query["confirm"];
        if (!long.TryParse(confirm, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long confirmed) || confirmed != id)
        {
            DashboardLogMessages.RemoveRefused(logger, id, peer, "no confirmation");
            await ProblemAsync(context, StatusCodes.Status400BadRequest, $"removal is not confirmed: pass confirm={id.ToString(CultureInfo.InvariantCulture)} naming the participant to remove").ConfigureAwait(false);
            return;
        }

        bool removed;
        try
        {
            removed = await resolved.Local.RemoveParticipantAsync(id, context.RequestAborted).ConfigureAwait(false);
        }
        catch (DseCoordinatorException ex)
        {
            DashboardLogMessages.RemoveRefused(logger, id, peer, ex.Message);
            int status = ex.Code == CoordinatorErrorCode.UnknownParticipant ? StatusCodes.Status404NotFound : StatusCodes.Status503ServiceUnavailable;
            await ProblemAsync(context, status, ex.Message).ConfigureAwait(false);
            return;
        }

        DashboardLogMessages.ParticipantRemoved(logger, id, caller.OperatorName!, peer, !removed);
        context.Response.ContentType = "application/json; charset=utf-8";
        await context.Response.WriteAsync(removed ? """{"removed":true}""" : """{"removed":false}""", context.RequestAborted).ConfigureAwait(false);
    }

    private async Task<byte[]> RenderAsync(Resolved resolved, string? operatorName, string prefix, string suffix, CancellationToken cancellationToken)
    {
        var view = await InspectAsync(resolved, cancellationToken).ConfigureAwait(false);
        var buffer = new ArrayBufferWriter<byte>(4096);
        buffer.Write(System.Text.Encoding.UTF8.GetBytes(prefix));
        using (var json = new Utf8JsonWriter(buffer))
        {
            DashboardView.Write(json, view, operatorName, resolved.Credentials is not null, resolved.Remote is not null, DateTimeOffset.UtcNow);
        }

        buffer.Write(System.Text.Encoding.UTF8.GetBytes(suffix));
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>
    /// The coordinator's view: its own in process; a remote one's through Inspect, or, while it cannot be read, an empty
    /// view whose fault says why (the page shows it, and the next refresh tries again).
    /// </summary>
    private async Task<ClusterInspection> InspectAsync(Resolved resolved, CancellationToken cancellationToken)
    {
        if (resolved.Local is { } local)
        {
            return local.Inspect(options.MaxVersionsPerParticipant);
        }

        try
        {
            return await resolved.Remote!.InspectAsync(options.MaxVersionsPerParticipant, cancellationToken).ConfigureAwait(false);
        }
        catch (DseCoordinatorException ex)
        {
            return new ClusterInspection(0, 0, 0, false, $"the coordinator at {resolved.Remote!.Target} cannot be read ({ex.Code}): {ex.Message}", [], []);
        }
    }

    private Resolved Resolve(IServiceProvider services)
    {
        if (_resolved is { } resolved)
        {
            return resolved;
        }

        if (options.RemoteCoordinator is { } remote)
        {
            resolved = new Resolved(null, remote, null);
            _resolved = resolved;
            return resolved;
        }

        var server = options.Coordinator is null || options.Credentials is null ? services.GetService<CoordinatorServer>() : null;
        var coordinator = options.Coordinator ?? server?.Coordinator ?? services.GetService<ClusterCoordinator>()
            ?? throw new InvalidOperationException("The DSE dashboard found no coordinator: call AddDseCoordinator, register a ClusterCoordinator, or set DseDashboardOptions.Coordinator or RemoteCoordinator.");
        resolved = new Resolved(coordinator, null, options.Credentials ?? server?.Credentials);
        _resolved = resolved;
        return resolved;
    }

    private static DseCaller? Authenticate(HttpContext context, DseCredentials credentials, out string reason)
    {
        var metadata = new Metadata();
        if (context.Request.Headers.Authorization is { Count: > 0 } values)
        {
            metadata.Add(DseCredentials.AuthorizationKey, values.ToString());
        }

        return credentials.Authenticate(metadata, out reason);
    }

    private static async Task ProblemAsync(HttpContext context, int status, string message)
    {
        context.Response.StatusCode = status;
        context.Response.ContentType = "application/json; charset=utf-8";
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var json = new Utf8JsonWriter(buffer))
        {
            json.WriteStartObject();
            json.WriteString("error", message);
            json.WriteEndObject();
        }

        await context.Response.Body.WriteAsync(buffer.WrittenMemory, context.RequestAborted).ConfigureAwait(false);
    }

    private static async Task SendAsync(HttpContext context, byte[] content, string contentType)
    {
        context.Response.ContentType = contentType;
        context.Response.Headers.ContentSecurityPolicy = ContentSecurityPolicy;
        context.Response.Headers.XContentTypeOptions = "nosniff";
        context.Response.Headers.CacheControl = "no-cache";
        await context.Response.Body.WriteAsync(content, context.RequestAborted).ConfigureAwait(false);
    }

    private static void NoStore(HttpContext context) => context.Response.Headers.CacheControl = "no-store";

    private static byte[] Asset(string name)
    {
        using var stream = Assembly.GetExecutingAssembly().GetManifestResourceStream("Dse.Dashboard." + name)
            ?? throw new InvalidOperationException($"The dashboard asset {name} is not embedded in {Assembly.GetExecutingAssembly().GetName().Name}.");
        using var copy = new MemoryStream();
        stream.CopyTo(copy);
        return copy.ToArray();
    }

    /// <summary>The coordinator shown: one in this process (with the credentials that make operators), or a remote one, read-only.</summary>
    private sealed record Resolved(ClusterCoordinator? Local, GrpcCoordinatorClient? Remote, DseCredentials? Credentials);
}
