using Microsoft.Extensions.Options;

namespace Dse.Darq.Hosting;

/// <summary>
/// Checks the options of every DARQ <c>AddDarq</c> registered when the host starts, naming the DARQ and the option;
/// the numeric limits are checked again by <see cref="Darq.OpenAsync"/>, whose error also fails the start.
/// </summary>
internal sealed class DarqOptionsValidator(DarqHostRegistry registry) : IValidateOptions<DarqOptions>
{
    public ValidateOptionsResult Validate(string? name, DarqOptions options)
    {
        if (name is null || !registry.Names.Contains(name))
        {
            return ValidateOptionsResult.Skip;
        }

        var failures = new List<string>();
        if (options.LogDevice is null)
        {
            failures.Add($"DARQ '{name}': DarqOptions.LogDevice is required; set it in the configure callback of AddDarq(\"{name}\", ...).");
        }

        if (options.CommitDevice is null)
        {
            failures.Add($"DARQ '{name}': DarqOptions.CommitDevice is required; set it in the configure callback of AddDarq(\"{name}\", ...).");
        }
        else if (ReferenceEquals(options.LogDevice, options.CommitDevice))
        {
            failures.Add($"DARQ '{name}': DarqOptions.CommitDevice must be a different device from DarqOptions.LogDevice.");
        }

        if (options.MaxMessageSize < 1 || options.MaxMessageSize > options.PageSize / 4)
        {
            failures.Add($"DARQ '{name}': DarqOptions.MaxMessageSize must be between 1 and a quarter of DarqOptions.PageSize ({options.PageSize / 4}); got {options.MaxMessageSize}.");
        }

        if (options.MaxBufferedInBytes < 0)
        {
            failures.Add($"DARQ '{name}': DarqOptions.MaxBufferedInBytes must be 0 or more; got {options.MaxBufferedInBytes}.");
        }

        if (options.MaxBufferedOutBytes < 0)
        {
            failures.Add($"DARQ '{name}': DarqOptions.MaxBufferedOutBytes must be 0 or more; got {options.MaxBufferedOutBytes}.");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
