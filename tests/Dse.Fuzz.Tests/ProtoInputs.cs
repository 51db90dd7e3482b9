using Google.Protobuf;
using Google.Protobuf.Reflection;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Inputs for a gRPC method from valid requests: byte-level mutations (<see cref="Mutations"/>) of their encoding, or
/// field-level ones, which keep the message well-formed and put boundary values in its fields (extreme integers, empty,
/// long or odd strings, empty or large byte strings, many repeated elements), so that the service's own checks are
/// reached, not only the parser's.
/// </summary>
internal static class ProtoInputs
{
    private static readonly long[] s_integers = [0, 1, -1, 2, long.MaxValue, long.MinValue, int.MaxValue, int.MinValue, uint.MaxValue, 1L << 40];

    private static readonly string[] s_strings = ["", " ", "\0", "fuzz\0", "\uD800", "é", new string('x', 257), new string('y', 5000), "../fuzz"];

    public static (byte[] Bytes, string How) Next(Random random, IReadOnlyList<IMessage> valid)
    {
        if (random.Next(5) < 2)
        {
            int source = random.Next(valid.Count);
            var message = Copy(valid[source]);
            var changes = new List<string>();
            for (int i = random.Next(1, 3); i > 0; i--)
            {
                changes.Add(MutateField(message, random));
            }

            return (message.ToByteArray(), $"valid request {source} with {string.Join(", ", changes)}");
        }

        return Mutations.Next(random, valid.Select(m => m.ToByteArray()).ToList());
    }

    /// <summary>Sets one scalar field of the message, or of a message nested in it, to a boundary value; returns what it did.</summary>
    private static string MutateField(IMessage message, Random random)
    {
        var fields = message.Descriptor.Fields.InFieldNumberOrder();
        if (fields.Count == 0)
        {
            return "no field";
        }

        var field = fields[random.Next(fields.Count)];
        if (field.IsRepeated)
        {
            var list = (System.Collections.IList)field.Accessor.GetValue(message);
            if (field.FieldType == FieldType.Message)
            {
                if (list.Count > 0 && random.Next(2) == 0)
                {
                    return $"{field.Name}[0].{MutateField((IMessage)list[0]!, random)}";
                }

                int copies = random.Next(2) == 0 ? 1 : 200;
                if (list.Count > 0)
                {
                    for (int i = 0; i < copies; i++)
                    {
                        list.Add(Copy((IMessage)list[i % list.Count]!));
                    }

                    return $"{field.Name} x{copies} more";
                }

                list.Add(field.MessageType.Parser.ParseFrom([]));
                return $"{field.Name} + default element";
            }

            // Many elements, or one that may be large: not both (a request of hundreds of megabytes tests the transport).
            int count = random.Next(2) == 0 ? 1 : 1000;
            for (int i = 0; i < count; i++)
            {
                list.Add(Boundary(field, random, large: count == 1));
            }

            return $"{field.Name} + {count} boundary values";
        }

        if (field.FieldType == FieldType.Message)
        {
            var nested = (IMessage?)field.Accessor.GetValue(message);
            if (nested is null)
            {
                field.Accessor.SetValue(message, field.MessageType.Parser.ParseFrom([]));
                return $"{field.Name} = default";
            }

            return $"{field.Name}.{MutateField(nested, random)}";
        }

        object value = Boundary(field, random, large: true);
        field.Accessor.SetValue(message, value);
        return $"{field.Name} = {Describe(value)}";
    }

    private static IMessage Copy(IMessage message) => message.Descriptor.Parser.ParseFrom(message.ToByteArray());

    private static object Boundary(FieldDescriptor field, Random random, bool large)
    {
        long integer = s_integers[random.Next(s_integers.Length)];
        return field.FieldType switch
        {
            FieldType.Int64 or FieldType.SInt64 or FieldType.SFixed64 => integer,
            FieldType.UInt64 or FieldType.Fixed64 => unchecked((ulong)integer),
            FieldType.Int32 or FieldType.SInt32 or FieldType.SFixed32 => unchecked((int)integer),
            FieldType.UInt32 or FieldType.Fixed32 => unchecked((uint)integer),
            FieldType.Bool => random.Next(2) == 0,
            FieldType.String => s_strings[random.Next(s_strings.Length)],
            FieldType.Bytes => random.Next(3) switch
            {
                0 => ByteString.Empty,
                1 => ByteString.CopyFrom(new byte[random.Next(1, 64)]),
                _ => ByteString.CopyFrom(new byte[large && random.Next(2) == 0 ? 300_000 : 4097]),
            },
            FieldType.Enum => unchecked((int)integer),
            _ => throw new NotSupportedException($"field {field.FullName} of type {field.FieldType}"),
        };
    }

    private static string Describe(object value) => value switch
    {
        string s => s.Length > 16 ? $"\"{s[..8]}...\" ({s.Length} chars)" : $"\"{s}\"",
        ByteString b => $"{b.Length} bytes",
        _ => value.ToString() ?? "null",
    };
}
