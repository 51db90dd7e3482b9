using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc;

/// <summary>
/// The write-ahead log's gRPC API (<c>dse.services.v1.LogService</c>) as plain gRPC over a <see cref="SpeculativeLog"/>:
/// host it with a <see cref="Dse.Grpc.DseServerInterceptor"/> on the same log, which runs each call as an action.
/// </summary>
/// <remarks>
/// Errors (see <c>protos/dse/services/v1/log.proto</c>): INVALID_ARGUMENT for bad input, OUT_OF_RANGE for an LSN that was
/// truncated or is at or beyond the tail, NOT_FOUND for an LSN where no entry starts (rolled back or not an entry start).
/// Awaits keep the caller's context: under the interceptor, code after an await runs merged back into an action.
/// </remarks>
[BindServiceMethod(typeof(ServiceBindings), nameof(ServiceBindings.BindLogService))]
public sealed class SpeculativeLogService : LogService.LogServiceBase
{
    /// <summary>The most entries one Scan returns, whatever it asks for.</summary>
    public const int MaxScanEntries = 1024;

    /// <summary>A Scan stops before its entries' data passes this many bytes (it always returns at least one entry).</summary>
    public const int MaxScanBytes = 2 * 1024 * 1024;

    private readonly SpeculativeLog _log;

    /// <summary>Serves <paramref name="log"/>, which must be the interceptor's StateObject.</summary>
    public SpeculativeLogService(SpeculativeLog log)
    {
        ArgumentNullException.ThrowIfNull(log);
        _log = log;
    }

    /// <inheritdoc />
    public override Task<AppendReply> Append(AppendRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var entries = request.Entries;
        if (entries.Count == 0)
        {
            throw ServiceErrors.InvalidArgument(context.Method, "'entries' is empty; append at least one entry.");
        }

        // All or none: check every entry before appending any.
        for (int i = 0; i < entries.Count; i++)
        {
            if (entries[i].Length > _log.MaxEntryBytes)
            {
                throw ServiceErrors.InvalidArgument(context.Method, $"entry {i} is {entries[i].Length} bytes; SpeculativeLog {_log.Id} accepts at most {_log.MaxEntryBytes}.");
            }
        }

        var reply = new AppendReply();
        try
        {
            for (int i = 0; i < entries.Count; i++)
            {
                reply.Lsns.Add(_log.Append(entries[i].Span));
            }
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, _log, context.Method) is { } status)
        {
            throw status;
        }

        return Task.FromResult(reply);
    }

    /// <inheritdoc />
    public override async Task<ReadReply> Read(ReadRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        long lsn = request.Lsn;
        if (lsn < 0)
        {
            throw ServiceErrors.InvalidArgument(context.Method, $"'lsn' is {lsn}; an LSN is never negative.");
        }

        ReadOnlyMemory<byte> data;
        try
        {
            data = await _log.ReadAsync(lsn, context.CancellationToken);
        }
        catch (ArgumentOutOfRangeException ex)
        {
            // Outside [begin, tail) nothing can ever be read there again (or yet); inside, no entry starts there.
            var code = lsn < _log.BeginLsn || lsn >= _log.TailLsn ? StatusCode.OutOfRange : StatusCode.NotFound;
            throw new RpcException(new Status(code, $"{context.Method}: {ex.Message}"));
        }
        catch (InvalidDataException ex)
        {
            throw new RpcException(new Status(StatusCode.NotFound, $"{context.Method}: {ex.Message} (LSN {lsn} is not the start of an entry, or the log is corrupt)"));
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, _log, context.Method) is { } status)
        {
            throw status;
        }

        return new ReadReply { Data = ByteString.CopyFrom(data.Span) };
    }

    /// <inheritdoc />
    public override async Task<ScanReply> Scan(ScanRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        if (request.FromLsn < 0)
        {
            throw ServiceErrors.InvalidArgument(context.Method, $"'from_lsn' is {request.FromLsn}; an LSN is never negative.");
        }

        if (request.MaxEntries <= 0)
        {
            throw ServiceErrors.InvalidArgument(context.Method, $"'max_entries' is {request.MaxEntries}; ask for at least one entry.");
        }

        IReadOnlyList<SpeculativeLogEntry> entries;
        try
        {
            entries = await _log.ScanAsync(request.FromLsn, Math.Min(request.MaxEntries, MaxScanEntries), context.CancellationToken);
        }
        catch (ArgumentOutOfRangeException ex)
        {
            // from_lsn points inside a record: a bad argument, answered as Read answers it.
            throw new RpcException(new Status(StatusCode.NotFound, $"{context.Method}: 'from_lsn' {request.FromLsn} is not the start of an entry ({ex.Message})"));
        }
        catch (InvalidDataException ex)
        {
            // The durable log is read record by record from from_lsn: a scan started inside an entry fails at its first
            // record. That is a bad argument, answered as Read answers it; a failure further on is corruption.
            if (await NotAnEntryStartAsync(request.FromLsn, context.CancellationToken) is { } notAStart)
            {
                throw new RpcException(new Status(StatusCode.NotFound,
                    $"{context.Method}: 'from_lsn' {request.FromLsn} is not the start of an entry ({notAStart}); scan from 0, or from an LSN or next_lsn returned before."));
            }

            throw new RpcException(new Status(StatusCode.DataLoss, $"{context.Method}: {ex.Message}"));
        }
        catch (Exception ex) when (ServiceErrors.Map(ex, _log, context.Method) is { } status)
        {
            throw status;
        }

        var reply = new ScanReply { NextLsn = request.FromLsn };
        long bytes = 0;
        foreach (var entry in entries)
        {
            bytes += entry.Data.Length;
            if (bytes > MaxScanBytes && reply.Entries.Count > 0)
            {
                break;
            }

            reply.Entries.Add(new LogEntry { Lsn = entry.Lsn, NextLsn = entry.NextLsn, Data = ByteString.CopyFrom(entry.Data.Span) });
            reply.NextLsn = entry.NextLsn;
        }

        return reply;
    }

    /// <summary>
    /// Why no record starts at <paramref name="lsn"/>, or <see langword="null"/> when one does (an entry, a commit record
    /// or rollback marker a <c>next_lsn</c> may point at) or when the scan starts at the log's begin instead. Called only
    /// after a scan failed, so a well-formed scan never pays for the extra read.
    /// </summary>
    private async ValueTask<string?> NotAnEntryStartAsync(long lsn, CancellationToken cancellationToken)
    {
        if (lsn <= _log.BeginLsn)
        {
            return null;
        }

        try
        {
            // Awaited on the call's context: under the interceptor the read runs in an action, as a scan does.
            await _log.ReadAsync(lsn, cancellationToken);
            return null;
        }
        catch (InvalidDataException ex)
        {
            return ex.Message;
        }
        catch (ArgumentOutOfRangeException)
        {
            // Not a user entry, but Read found a record there (or cannot tell: rolled back, truncated meanwhile).
            return null;
        }
    }
}
