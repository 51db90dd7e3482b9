using Dse.Coordinator.Dashboard;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Mounts the DSE coordinator's live dashboard in any ASP.NET Core app (see docs/dashboard.md).</summary>
public static class DseDashboardEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Maps the dashboard under <paramref name="pathPrefix"/>: the page (<c>PREFIX/</c>), its script and style sheet,
    /// <c>PREFIX/api/snapshot</c> (the view as JSON), <c>PREFIX/api/events</c> (server-sent events pushing the view) and
    /// <c>POST PREFIX/api/participants/{id}/remove?confirm={id}</c> (an operator's removal). Read-only unless the request
    /// carries an operator's bearer token from the coordinator's participants file. Browsers need HTTP/1.1 or TLS: on a
    /// plaintext HTTP/2-only port (the coordinator host's gRPC port without TLS) serve it on an HTTP/1.1 endpoint.
    /// </summary>
    /// <param name="endpoints">The endpoints.</param>
    /// <param name="pathPrefix">Where to mount it; default <c>/dashboard</c>. Must start with '/'.</param>
    /// <param name="configure">Sets the options; by default the coordinator and credentials come from <c>AddDseCoordinator</c>.</param>
    /// <returns>The group of the dashboard's endpoints, for example to require a host or an authorization policy.</returns>
    /// <exception cref="ArgumentException"><paramref name="pathPrefix"/> does not start with '/', or an option is invalid.</exception>
    public static RouteGroupBuilder MapDseDashboard(this IEndpointRouteBuilder endpoints, string pathPrefix = "/dashboard", Action<DseDashboardOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentNullException.ThrowIfNull(pathPrefix);
        if (!pathPrefix.StartsWith('/'))
        {
            throw new ArgumentException($"The dashboard's path prefix must start with '/' (got '{pathPrefix}').", nameof(pathPrefix));
        }

        var options = new DseDashboardOptions();
        configure?.Invoke(options);
        options.Validate();

        string prefix = pathPrefix.TrimEnd('/');
        var handlers = new DashboardEndpoints(options);
        var group = endpoints.MapGroup(prefix);

        // The page names its base (PREFIX/), so it works with or without the trailing slash.
        group.MapGet("/", (HttpContext context) => DashboardEndpoints.PageAsync(context, prefix));
        group.MapGet("/index.html", (HttpContext context) => DashboardEndpoints.PageAsync(context, prefix));
        group.MapGet("/dashboard.js", DashboardEndpoints.ScriptAsync);
        group.MapGet("/dashboard.css", DashboardEndpoints.StyleAsync);
        group.MapGet("/api/snapshot", handlers.SnapshotAsync);
        group.MapGet("/api/events", handlers.EventsAsync);
        group.MapPost("/api/participants/{id:long}/remove", handlers.RemoveAsync);
        return group;
    }
}
