using System.Buffers.Binary;

namespace Dse.Coordinator.Tests;

/// <summary>The journal entries' encoding, and the journaled coordinator over the real logs.</summary>
public sealed class CoordinatorJournalTests : IAsyncLifetime
{
    private readonly string _dir = Path.Combine(Path.GetTempPath(), "dse-journal-" + Guid.NewGuid().ToString("N"));

    public Task InitializeAsync()
    {
        Directory.CreateDirectory(_dir);
        return Task.CompletedTask;
    }

    public Task DisposeAsync()
    {
        Directory.Delete(_dir, recursive: true);
        return Task.CompletedTask;
    }

    public static TheoryData<ClusterJournalEntry> Entries() =>
    [
        new CoordinatorStartedEntry(7),
        new ParticipantRegisteredEntry(42),
        new RollbackAcknowledgedEntry(3, 9, long.MaxValue),
        new RollbackDecidedEntry(new RollbackDecision(5, 2, new Dictionary<long, long> { [1] = 10, [2] = 0, [3] = 7 })),
        new RollbackDecidedEntry(new RollbackDecision(6, 4, new Dictionary<long, long> { [4] = 1 }, RollbackReason.Removed)),
        new RollbackDecidedEntry(new RollbackDecision(2, RollbackDecision.ColdStart, new Dictionary<long, long>())),
    ];

    [Theory]
    [MemberData(nameof(Entries))]
    public void Entry_RoundTrips(ClusterJournalEntry entry)
    {
        var decoded = CoordinatorJournal.Decode(CoordinatorJournal.Encode(entry));

        if (entry is RollbackDecidedEntry { Decision: var expected })
        {
            var actual = Assert.IsType<RollbackDecidedEntry>(decoded).Decision;
            Assert.Equal(expected.WorldLine, actual.WorldLine);
            Assert.Equal(expected.FailedObjectId, actual.FailedObjectId);
            Assert.Equal(expected.Reason, actual.Reason);
            Assert.Equal(expected.Cut.OrderBy(kv => kv.Key), actual.Cut.OrderBy(kv => kv.Key));
        }
        else
        {
            Assert.Equal(entry, decoded);
        }
    }

    [Fact]
    public void Registration_HasTheDocumentedBytes()
    {
        var bytes = CoordinatorJournal.Encode(new ParticipantRegisteredEntry(0x0102));

        Assert.Equal([1, 2, 0x02, 0x01, 0, 0, 0, 0, 0, 0], bytes);
    }

    public static TheoryData<byte[], string> Garbled() => new()
    {
        { [], "shorter than the 2-byte entry header" },
        { [2, 1, 0, 0, 0, 0, 0, 0, 0, 0], "format version 2" },
        { [1, 99], "unknown entry type 99" },
        { [1, 2, 1, 2, 3], "3 body bytes where 8 were expected" },
        { DecisionWithCount(5), "listing 5 participants" },
        { DecisionWithCount(-1), "listing -1 participants" },
    };

    [Theory]
    [MemberData(nameof(Garbled))]
    public void GarbledEntry_IsAClearError(byte[] bytes, string problem)
    {
        var ex = Assert.Throws<InvalidDataException>(() => CoordinatorJournal.Decode(bytes, 3, "test.log"));

        Assert.Contains("Record 3 of coordinator log test.log", ex.Message, StringComparison.Ordinal);
        Assert.Contains(problem, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task OpenAsync_ALogWithAGarbledEntry_RefusesToStart()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using (var log = new InMemoryCoordinatorLog(store))
        {
            await log.OpenAsync();
            await log.AppendAsync(CoordinatorJournal.Encode(new ParticipantRegisteredEntry(1)));
            await log.AppendAsync(new byte[] { 1, 77 });
        }

        await using var again = new InMemoryCoordinatorLog(store);
        var ex = await Assert.ThrowsAsync<InvalidDataException>(() => CoordinatorJournal.OpenAsync(again));
        Assert.Contains("Record 1", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task FileLog_FailureFreeRun_NoDurableWriteAfterMembership_AndARestartRecoversIt()
    {
        string path = Path.Combine(_dir, "coordinator.log");
        long appendsAfterMembership;
        long worldLine;
        await using (var log = new FileCoordinatorLog(path))
        {
            var (journal, recovered) = await CoordinatorJournal.OpenAsync(log);
            await using var coordinator = await ClusterCoordinator.OpenAsync(journal, recovered);
            for (long id = 1; id <= 3; id++)
            {
                await coordinator.ConnectAsync(new ConnectRequest(id, []));
            }

            appendsAfterMembership = log.DurableAppends;
            for (long v = 1; v <= 200; v++)
            {
                for (long id = 1; id <= 3; id++)
                {
                    var dep = new Dependency((id % 3) + 1, v - 1);
                    await coordinator.ReportPersistedAsync(id, new VersionReport(v, 0, v > 1 ? [dep] : []));
                    await coordinator.HeartbeatAsync(id);
                }
            }

            Assert.Equal(200, coordinator.State.CommittedVersion(1));
            Assert.Equal(4, appendsAfterMembership);   // the start and three registrations
            Assert.Equal(appendsAfterMembership, log.DurableAppends);

            await coordinator.ConnectAsync(new ConnectRequest(2, [new VersionReport(199, 0, [new Dependency(3, 198)])]));
            Assert.Equal(appendsAfterMembership + 1, log.DurableAppends);   // the decision
            worldLine = coordinator.WorldLine;
        }

        await using var reopened = new FileCoordinatorLog(path);
        var (journal2, recovered2) = await CoordinatorJournal.OpenAsync(reopened);
        await using var second = await ClusterCoordinator.OpenAsync(journal2, recovered2);
        Assert.Equal(2, second.Incarnation);
        Assert.Equal(worldLine, second.WorldLine);
        Assert.True(second.State.IsRecovering);
        Assert.Equal(RollbackReason.Restart, second.State.Decisions[^1].Reason);
    }

    private static byte[] DecisionWithCount(int count)
    {
        var bytes = new byte[2 + 21];
        bytes[0] = 1;
        bytes[1] = 3;
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(2), 1);
        BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(2 + 17), count);
        return bytes;
    }
}
