namespace Dse.Dashboard.Tests;

/// <summary>
/// A fact that runs in the system's Chromium; skipped, saying why, only when <see cref="ExecutablePath"/> is missing
/// (CI installs it: <c>.ci/run</c> runs <c>apt-get install chromium</c>).
/// </summary>
public sealed class ChromiumFactAttribute : FactAttribute
{
    /// <summary>Debian's Chromium, driven headless by Playwright; no browser is downloaded.</summary>
    public const string ExecutablePath = "/usr/bin/chromium";

    public ChromiumFactAttribute()
    {
        if (!File.Exists(ExecutablePath))
        {
            Skip = $"No Chromium at {ExecutablePath}: install it (apt-get install -y chromium, as .ci/run does) to run the browser tests.";
        }
    }
}
