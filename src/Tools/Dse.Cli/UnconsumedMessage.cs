namespace Dse.Cli;

/// <summary>An IN, SELF or activity message of a DARQ log that nothing consumed yet.</summary>
/// <param name="Kind">IN, SELF or ACTIVITY.</param>
/// <param name="Length">The payload's length in bytes.</param>
/// <param name="ProducerId">IN with deduplication: the producer id; otherwise <see langword="null"/>.</param>
/// <param name="ProducerSequence">IN with deduplication: the producer's sequence number.</param>
/// <param name="Activity">An activity: its name.</param>
internal sealed record UnconsumedMessage(string Kind, int Length, long? ProducerId, long? ProducerSequence, string? Activity);
