namespace Dse.Darq.Tests;

/// <summary>
/// A two-DARQ pipeline (A's processor turns each IN into an OUT to B; B's processor records each arrival as a SELF
/// message) with a crash cut of each side: every message is recorded at B exactly once.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqPipelineRecoveryTests
{
    private const int N = 12;
    private const long Producer = 1;
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Pipeline_CrashCutOfSourceAndOfDestination_RecordsEachMessageExactlyOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var token = guard.Token;
        var destinations = new TestDestinations();
        var storageA = new DarqTestStorage();
        var storageB = new DarqTestStorage();
        var b = await storageB.OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        var processorB = await b.RegisterProcessorAsync();

        var committedOut = new List<long>();
        await using (var a = await storageA.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            for (int i = 0; i < 6; i++)
            {
                await a.EnqueueAsync(Producer, i, $"{i}".Bytes());
            }

            await a.CommitAsync();
            var processorA = await a.RegisterProcessorAsync();
            var replay = processorA.Drain();
            for (int i = 0; i < 6; i++)
            {
                var step = await processorA.StepAsync(new DarqStep().Consume(replay[i]).AddOut("b", replay[i].Payload));
                if (i < 3)
                {
                    committedOut.Add(step.OutLsns[0]);
                }

                if (i == 2)
                {
                    await a.CommitAsync();
                }
            }

            foreach (long lsn in committedOut)
            {
                await a.WaitForDeliveredAsync(lsn, token);
            }

            // Cut A: its ACKs for 0..2 and its steps for 3..5 are lost.
            storageA.CrashNow();
        }

        // B records the three arrivals; the third record is not committed when B crashes.
        for (int i = 0; i < 3; i++)
        {
            var message = await processorB.Messages.ReadAsync(token);
            await processorB.StepAsync(new DarqStep().Consume(message).AddSelf(message.Payload));
            if (i == 1)
            {
                await b.CommitAsync();
            }
        }

        await destinations.Gate.WaitAsync(token);
        try
        {
            storageB.CrashNow();
            await b.DisposeAsync();
            b = await storageB.OpenAsync(DarqDeliveryTests.Named("b"));
            destinations.Registry.Add(b);
        }
        finally
        {
            destinations.Gate.Release();
        }

        processorB = await b.RegisterProcessorAsync();
        await using (var a = await storageA.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            // A's producer retries 3..5 (already committed: duplicates) and sends 6..11.
            for (int i = 3; i < N; i++)
            {
                await a.EnqueueAsync(Producer, i, $"{i}".Bytes());
            }

            await a.CommitAsync();
            Assert.Equal(N - 3, a.UnconsumedCount);
            var processorA = await a.RegisterProcessorAsync();
            var outLsns = new List<long>(committedOut);
            foreach (var message in processorA.Drain())
            {
                outLsns.AddRange((await processorA.StepAsync(new DarqStep().Consume(message).AddOut("b", message.Payload))).OutLsns);
            }

            await a.CommitAsync();
            foreach (long lsn in outLsns)
            {
                await a.WaitForDeliveredAsync(lsn, token);
            }

            Assert.Equal(0, a.PendingOutCount);
        }

        // 0..2 were acknowledged twice (the resend after A's cut was a duplicate at B), 3..11 once.
        Assert.Equal(3 + 3 + (N - 3), destinations.Acknowledged);

        // B's replay holds its two committed records and the arrival whose record was lost; then 9 new arrivals.
        int toRecord = processorB.ReplayCount + (N - 3);
        Assert.Equal(3, processorB.ReplayCount);
        for (int i = 0; i < toRecord; i++)
        {
            var message = await processorB.Messages.ReadAsync(token);
            if (message.Kind == DarqMessageKind.In)
            {
                await processorB.StepAsync(new DarqStep().Consume(message).AddSelf(message.Payload));
            }
        }

        Assert.Equal(N, b.UnconsumedCount);
        await b.DisposeAsync();

        await using var final = await storageB.OpenAsync(DarqDeliveryTests.Named("b"));
        var records = (await final.RegisterProcessorAsync()).Drain();
        Assert.All(records, r => Assert.Equal(DarqMessageKind.Self, r.Kind));
        Assert.Equal(Enumerable.Range(0, N).Select(i => $"{i}"), records.Select(r => r.Text()).OrderBy(int.Parse));
    }
}
