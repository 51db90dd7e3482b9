namespace Dse.Fuzz.Tests;

/// <summary>What a <see cref="Mutation"/> does to an encoding.</summary>
internal enum MutationKind
{
    /// <summary>Flips bit <c>Value % 8</c> of the byte at <c>At</c>.</summary>
    FlipBit,

    /// <summary>Sets the byte at <c>At</c> to a boundary byte (0x00, 0x01, 0x7F, 0x80, 0xFF, ...).</summary>
    SetByte,

    /// <summary>Overwrites 1, 2, 4 or 8 bytes at <c>At</c> with a boundary integer, little-endian.</summary>
    BoundaryInteger,

    /// <summary>Cuts the encoding to <c>At</c> bytes.</summary>
    Truncate,

    /// <summary>Appends <c>Length</c> bytes: zeros, seeded random bytes, or a copy of the encoding's start.</summary>
    Extend,

    /// <summary>Removes <c>Length</c> bytes at <c>At</c>.</summary>
    Delete,

    /// <summary>Inserts <c>Length</c> seeded random bytes at <c>At</c>.</summary>
    Insert,

    /// <summary>Copies a slice of a donor (another valid encoding, or this one) over the bytes at <c>At</c>.</summary>
    SpliceOver,

    /// <summary>Inserts a slice of a donor at <c>At</c> (a duplicated or foreign field).</summary>
    SpliceIn,
}
