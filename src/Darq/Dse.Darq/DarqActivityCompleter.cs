namespace Dse.Darq;

/// <summary>
/// The processor's decision on a finished activity: adds to <paramref name="completion"/> (which already consumes the
/// activity message) the SELF and OUT messages, or further activities, that reflect the result. Called by the runner, one
/// completion at a time, just before it steps <paramref name="completion"/>.
/// </summary>
/// <param name="activity">The finished activity.</param>
/// <param name="result">What the handler returned.</param>
/// <param name="completion">The completion step under construction; must not consume anything else that is not the processor's to consume.</param>
public delegate void DarqActivityCompleter(DarqActivity activity, ReadOnlyMemory<byte> result, DarqStep completion);
