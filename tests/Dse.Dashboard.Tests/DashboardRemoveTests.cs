using System.Net;
using System.Net.Http.Headers;
using System.Text.Json;

namespace Dse.Dashboard.Tests;

/// <summary>The dashboard is read-only unless an operator authenticates; removal needs the operator's token and a confirmation.</summary>
[Trait("Category", "Security")]
public sealed class DashboardRemoveTests
{
    [Fact]
    public async Task Remove_WithoutAParticipantsFile_IsRefused_AndRemovesNothing()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1);

        using var response = await RemoveAsync(server, 1, Dse.Grpc.DseCredentials.CreateToken(), confirm: "1");

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Contains("read-only", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.False(await RemovedAsync(server, 1));
    }

    [Fact]
    public async Task Remove_WithoutAToken_IsUnauthorized()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1);

        using var response = await RemoveAsync(server, 1, token: null, confirm: "1");

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.False(await RemovedAsync(server, 1));
    }

    [Fact]
    public async Task Remove_WithAnUnknownToken_IsUnauthorized_AndTheTokenIsNotEchoed()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1);
        string forged = Dse.Grpc.DseCredentials.CreateToken();

        using var response = await RemoveAsync(server, 1, forged, confirm: "1");

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.DoesNotContain(forged, await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.False(await RemovedAsync(server, 1));
    }

    [Fact]
    public async Task Remove_WithAParticipantsToken_IsForbidden()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1);

        using var response = await RemoveAsync(server, 1, server.ParticipantToken, confirm: "1");

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Contains("participant 1", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.False(await RemovedAsync(server, 1));
    }

    [Theory]
    [InlineData(null)]
    [InlineData("2")]
    [InlineData("yes")]
    public async Task Remove_ByTheOperatorWithoutAMatchingConfirmation_IsABadRequest(string? confirm)
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1, 2);

        using var response = await RemoveAsync(server, 1, server.OperatorToken, confirm);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Contains("confirm=1", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.False(await RemovedAsync(server, 1));
        Assert.False(await RemovedAsync(server, 2));
    }

    [Fact]
    public async Task Remove_ByTheOperatorWithConfirmation_RemovesTheParticipant_AndTheDecisionShows()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1, 2);

        using var response = await RemoveAsync(server, 2, server.OperatorToken, confirm: "2");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Contains("\"removed\":true", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.True(await RemovedAsync(server, 2));
        Assert.False(await RemovedAsync(server, 1));
        using var view = await DashboardEndpointTests.SnapshotAsync(server, server.OperatorToken);
        Assert.Equal("ops", view.RootElement.GetProperty("operator").GetString());
        var decision = view.RootElement.GetProperty("decisions").EnumerateArray().Single();
        Assert.Equal("Removed", decision.GetProperty("reason").GetString());
        Assert.Equal(2, decision.GetProperty("failed").GetInt64());

        using var again = await RemoveAsync(server, 2, server.OperatorToken, confirm: "2");
        Assert.Contains("\"removed\":false", await again.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Remove_ByTheOperatorOfAnUnknownParticipant_IsNotFound()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);

        using var response = await RemoveAsync(server, 7, server.OperatorToken, confirm: "7");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task Snapshot_NamesTheOperatorOnlyForAnOperatorsToken()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);

        using var anonymous = await DashboardEndpointTests.SnapshotAsync(server);
        using var participant = await DashboardEndpointTests.SnapshotAsync(server, server.ParticipantToken);
        using var operatorView = await DashboardEndpointTests.SnapshotAsync(server, server.OperatorToken);

        Assert.Equal(JsonValueKind.Null, anonymous.RootElement.GetProperty("operator").ValueKind);
        Assert.Equal(JsonValueKind.Null, participant.RootElement.GetProperty("operator").ValueKind);
        Assert.Equal("ops", operatorView.RootElement.GetProperty("operator").GetString());
        Assert.True(anonymous.RootElement.GetProperty("removalAvailable").GetBoolean());
    }

    private static async Task<HttpResponseMessage> RemoveAsync(DashboardServer server, long id, string? token, string? confirm)
    {
        using var request = new HttpRequestMessage(HttpMethod.Post, $"api/participants/{id}/remove" + (confirm is null ? "" : $"?confirm={confirm}"));
        if (token is not null)
        {
            request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", token);
        }

        return await server.Http.SendAsync(request);
    }

    private static async Task<bool> RemovedAsync(DashboardServer server, long id)
    {
        using var view = await DashboardEndpointTests.SnapshotAsync(server);
        return view.RootElement.GetProperty("participants").EnumerateArray().Single(p => p.GetProperty("id").GetInt64() == id).GetProperty("removed").GetBoolean();
    }
}
