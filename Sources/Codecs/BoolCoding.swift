/// The `bool` codec.
enum BoolCoding {
    /// Any non-zero byte is true (docs/configuration.md#codecs), whatever the width; no bytes at all is not a boolean.
    static func decode(_ bytes: [UInt8]) throws(CodecError) -> String {
        guard !bytes.isEmpty else { throw CodecError("codec bool needs at least 1 byte, got 0") }
        return bytes.contains(where: { $0 != 0 }) ? "true" : "false"
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
