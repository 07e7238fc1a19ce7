/// The `bool` codec.
enum BoolCoding {
    /// Any non-zero byte is true (docs/configuration.md#codecs), whatever the width; no bytes at all is not a boolean.
    static func decode(_ bytes: UnsafeRawBufferPointer, to out: inout UTF8Buffer) throws(CodecError) {
        guard !bytes.isEmpty else { throw CodecError("codec bool needs at least 1 byte, got 0") }
        out.append(bytes.contains(where: { $0 != 0 }) ? "true" : "false")
    }

    /// `true`/`false`/`1`/`0`, in any letter case (that cannot change the meaning), as one byte.
    static func encode(_ payload: String) throws(CodecError) -> [UInt8] {
        switch PayloadText.trimmed(payload).lowercased() {
        case "true", "1": return [1]
        case "false", "0": return [0]
        default: throw CodecError("\(PayloadText.quoted(payload)) is not a boolean (true, false, 1 or 0)")
        }
    }
}
