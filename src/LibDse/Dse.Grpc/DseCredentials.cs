using System.Globalization;
using System.Security.Cryptography;
using System.Text;
using Grpc.Core;

namespace Dse.Grpc;

/// <summary>
/// Who may speak: the participants file of a coordinator or a speculative service, mapping each participant id (and
/// each operator name) to the SHA-256 hash of its bearer token. A caller proves its identity with the gRPC metadata
/// entry <c>authorization: Bearer TOKEN</c>; the file holds hashes only, so reading it does not reveal a token.
/// </summary>
/// <remarks>
/// The file has one credential a line, <c>participant ID sha256:HEX</c> or <c>operator NAME sha256:HEX</c>; blank lines
/// and text after <c>#</c> are ignored. One token may be listed for several participant ids (a process that hosts several
/// StateObjects uses one token for all of them); an operator's token must not also be a participant's. Tokens are
/// compared by hash, in constant time, against every entry. Nothing here logs or echoes a token.
/// </remarks>
public sealed class DseCredentials
{
    /// <summary>The metadata key of the credential: <c>authorization</c>.</summary>
    public const string AuthorizationKey = "authorization";

    /// <summary>The scheme of the credential: <c>Bearer</c>.</summary>
    public const string Scheme = "Bearer";

    private const string HashPrefix = "sha256:";

    // One entry per distinct token hash; never changed after construction.
    private readonly Principal[] _principals;

    private DseCredentials(Principal[] principals, string source)
    {
        _principals = principals;
        Source = source;
    }

    /// <summary>Where the credentials were read from (a path), for messages.</summary>
    public string Source { get; }

    /// <summary>How many participant ids have a token.</summary>
    public int ParticipantCount
    {
        get
        {
            int count = 0;
            foreach (var principal in _principals)
            {
                count += principal.ParticipantIds.Count;
            }

            return count;
        }
    }

    /// <summary>How many operator tokens there are.</summary>
    public int OperatorCount
    {
        get
        {
            int count = 0;
            foreach (var principal in _principals)
            {
                count += principal.IsOperator ? 1 : 0;
            }

            return count;
        }
    }

    /// <summary>Reads a participants file.</summary>
    /// <exception cref="InvalidDataException">A line is malformed; the message names the file, the line number and what is wrong, never the line's text.</exception>
    /// <exception cref="IOException">The file cannot be read.</exception>
    public static DseCredentials Load(string path)
    {
        ArgumentNullException.ThrowIfNull(path);
        return Parse(File.ReadAllLines(path), path);
    }

    /// <summary>Parses the lines of a participants file; <paramref name="source"/> names it in messages.</summary>
    /// <exception cref="InvalidDataException">A line is malformed; the message names the line number and what is wrong.</exception>
    public static DseCredentials Parse(IReadOnlyList<string> lines, string source)
    {
        ArgumentNullException.ThrowIfNull(lines);
        ArgumentNullException.ThrowIfNull(source);
        var byHash = new Dictionary<string, Principal>(StringComparer.Ordinal);
        var participants = new HashSet<long>();
        var operators = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < lines.Count; i++)
        {
            string line = lines[i];
            int comment = line.IndexOf('#', StringComparison.Ordinal);
            string[] fields = (comment >= 0 ? line[..comment] : line).Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries);
            if (fields.Length == 0)
            {
                continue;
            }

            string where = $"{source} line {i + 1}";
            if (fields.Length != 3 || fields[0] is not ("participant" or "operator"))
            {
                throw new InvalidDataException($"{where}: expected 'participant ID sha256:HEX' or 'operator NAME sha256:HEX'.");
            }

            string hash = fields[2];
            if (!IsHash(hash))
            {
                throw new InvalidDataException($"{where}: the third field must be sha256: followed by 64 hexadecimal digits (the hash of the token, never the token itself).");
            }

            hash = hash.ToLowerInvariant();
            var principal = byHash.TryGetValue(hash, out var existing) ? existing : byHash[hash] = new Principal(Convert.FromHexString(hash.AsSpan(HashPrefix.Length)));
            if (fields[0] == "participant")
            {
                if (!long.TryParse(fields[1], NumberStyles.None, CultureInfo.InvariantCulture, out long id))
                {
                    throw new InvalidDataException($"{where}: a participant id is a whole number of 0 or more.");
                }

                if (!participants.Add(id))
                {
                    throw new InvalidDataException($"{where}: participant {id} is listed twice; each participant has one token.");
                }

                principal.ParticipantIds.Add(id);
            }
            else
            {
                if (!operators.Add(fields[1]))
                {
                    throw new InvalidDataException($"{where}: operator {fields[1]} is listed twice.");
                }

                principal.OperatorName = fields[1];
            }

            if (principal.IsOperator && principal.ParticipantIds.Count > 0)
            {
                throw new InvalidDataException($"{where}: an operator's token must not also be a participant's; give each its own token.");
            }
        }

        return new DseCredentials([.. byHash.Values], source);
    }

    /// <summary>A new random token: 32 random bytes, base64url, prefixed <c>dse_</c>.</summary>
    public static string CreateToken() => "dse_" + Base64Url(RandomNumberGenerator.GetBytes(32));

    /// <summary>
    /// Whether <paramref name="token"/> can be sent as a bearer token: printable ASCII without spaces, as an HTTP header
    /// value carries it. The <paramref name="problem"/> never holds the token.
    /// </summary>
    public static bool IsUsableToken(string token, out string problem)
    {
        ArgumentNullException.ThrowIfNull(token);
        if (token.Length == 0)
        {
            problem = "it is empty";
            return false;
        }

        foreach (char c in token)
        {
            if (c is <= ' ' or > '~')
            {
                problem = "it holds a space, a control character or a non-ASCII character";
                return false;
            }
        }

        problem = string.Empty;
        return true;
    }

    /// <summary>The hash of <paramref name="token"/> as a participants file holds it: <c>sha256:</c> and 64 lowercase hex digits.</summary>
    public static string HashToken(string token)
    {
        ArgumentNullException.ThrowIfNull(token);
        return HashPrefix + Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(token)));
    }

    /// <summary>
    /// The caller that <paramref name="headers"/> authenticate, or <c>null</c> with the reason (no credential, not a
    /// bearer token, or a token this file does not hold). The reason never contains the token.
    /// </summary>
    public DseCaller? Authenticate(Metadata? headers, out string reason)
    {
        string? value = null;
        if (headers is not null)
        {
            foreach (var entry in headers)
            {
                if (!entry.IsBinary && string.Equals(entry.Key, AuthorizationKey, StringComparison.Ordinal))
                {
                    value = entry.Value;
                    break;
                }
            }
        }

        if (value is null)
        {
            reason = $"the call carries no credential: send the metadata entry '{AuthorizationKey}: {Scheme} TOKEN' with a token listed in the participants file";
            return null;
        }

        if (value.Length <= Scheme.Length + 1 || !value.StartsWith(Scheme, StringComparison.OrdinalIgnoreCase) || value[Scheme.Length] != ' ')
        {
            reason = $"the '{AuthorizationKey}' entry is not a {Scheme} token";
            return null;
        }

        Span<byte> hash = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(Encoding.UTF8.GetBytes(value.AsSpan(Scheme.Length + 1).Trim().ToString()), hash);

        // Every entry is compared, in constant time, so the time taken does not tell which entry came close.
        Principal? found = null;
        foreach (var principal in _principals)
        {
            if (CryptographicOperations.FixedTimeEquals(hash, principal.Hash))
            {
                found = principal;
            }
        }

        if (found is null)
        {
            reason = "the bearer token is not listed in the participants file";
            return null;
        }

        reason = string.Empty;
        return found.Caller;
    }

    private static bool IsHash(string field)
    {
        if (field.Length != HashPrefix.Length + 64 || !field.StartsWith(HashPrefix, StringComparison.OrdinalIgnoreCase))
        {
            return false;
        }

        foreach (char c in field.AsSpan(HashPrefix.Length))
        {
            if (!char.IsAsciiHexDigit(c))
            {
                return false;
            }
        }

        return true;
    }

    private static string Base64Url(byte[] bytes) =>
        Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    /// <summary>Everything one token may do.</summary>
    private sealed class Principal(byte[] hash)
    {
        private DseCaller? _caller;

        public byte[] Hash { get; } = hash;

        public HashSet<long> ParticipantIds { get; } = [];

        public string? OperatorName { get; set; }

        public bool IsOperator => OperatorName is not null;

        // Built once parsing has ended; the sets no longer change.
        public DseCaller Caller => _caller ??= new DseCaller([.. ParticipantIds], OperatorName);
    }
}
