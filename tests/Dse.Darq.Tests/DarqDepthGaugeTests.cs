using System.Diagnostics.Metrics;

namespace Dse.Darq.Tests;

/// <summary>The depth gauges of the <c>Dse.Darq</c> meter: one measurement per open DARQ, tagged with its name, gone once it closes.</summary>
public sealed class DarqDepthGaugeTests
{
    [Fact]
    public async Task Gauges_OfAnOpenDarq_ReportItsBacklog_AndStopAfterDispose()
    {
        var storage = new DarqTestStorage();
        // A name of its own: DARQs of tests running alongside are open too, most of them named "test".
        string name = $"gauge-{Guid.NewGuid():N}";
        var darq = await storage.OpenAsync(o =>
        {
            o.Name = name;
            o.MaxBufferedInBytes = 8 * 1024;
        });
        for (int i = 0; i < 40; i++)
        {
            await darq.EnqueueAsync(new byte[1024]);
        }

        await darq.CommitAsync();
        var open = Collect(darq.Name);
        Assert.Equal(40, open["dse.darq.unconsumed"]);
        Assert.Equal(darq.SpilledInCount, open["dse.darq.in.spilled"]);
        Assert.True(open["dse.darq.in.spilled"] > 0);
        Assert.Equal(0, open["dse.darq.out.pending"]);

        await darq.DisposeAsync();
        Assert.Empty(Collect(darq.Name));
    }

    // Collects the gauges once and keeps this DARQ's values (other tests' DARQs may be open at the same time).
    private static Dictionary<string, long> Collect(string darqName)
    {
        var values = new Dictionary<string, long>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == DarqInstrumentation.MeterName && instrument.Name is "dse.darq.unconsumed" or "dse.darq.in.spilled" or "dse.darq.out.pending")
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == "darq" && Equals(tag.Value, darqName))
                {
                    values[instrument.Name] = value;
                }
            }
        });
        listener.Start();
        listener.RecordObservableInstruments();
        return values;
    }
}
