namespace Dse.Storage;

/// <summary>What a FasterLog record length word is (<see cref="FasterLogFraming.Classify"/>).</summary>
internal enum FrameWord
{
    /// <summary>The length of a record that fits in its page.</summary>
    Record,

    /// <summary>Zero: the rest of the page is padding, the next record starts the next page.</summary>
    Padding,

    /// <summary>Damage: no valid record starts with this word here.</summary>
    Damaged,
}
