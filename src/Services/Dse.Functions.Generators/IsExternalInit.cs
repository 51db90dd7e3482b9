namespace System.Runtime.CompilerServices;

/// <summary>Lets records compile for netstandard2.0, which lacks this marker type.</summary>
internal static class IsExternalInit;
