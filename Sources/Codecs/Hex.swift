/// The `hex` codec: bytes as lower-case hex digits.
public enum Hex {
    /// Lower case, no separators: one canonical spelling, so retained payloads compare textually.
    ///
    /// Written straight into the string's storage: this runs for every notification of a `hex` channel, and an
    /// intermediate byte array (one allocation and one free) and a table behind a lazy global were most of its cost.
    public static func encode(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var index = 0
            for byte in bytes {
                out[index] = digit(byte >> 4)
                out[index + 1] = digit(byte & 0xF)
                index += 2
            }
            return index
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// Accepts either case, groups separated by spaces or colons ("01 02", "aa:bb"), and an optional `0x` on
    /// the whole payload or on each group. Every group must have an even number of digits: "1 2" could mean
    /// 0x12 or 0x01 0x02, so it is rejected rather than guessed.
    public static func decode(_ payload: String) throws(CodecError) -> [UInt8] {
        let text = PayloadText.trimmed(payload)
        let groups = text.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "\t" })
        var bytes: [UInt8] = []
        for var group in groups {
            if group.hasPrefix("0x") || group.hasPrefix("0X") { group = group.dropFirst(2) }
            let chars = Array(group.utf8)
            guard !chars.isEmpty else { throw CodecError("\(PayloadText.quoted(payload)) is not hex: empty 0x group") }
            guard chars.count % 2 == 0 else {
                throw CodecError("\(PayloadText.quoted(payload)) is not hex: odd number of digits in \(PayloadText.quoted(group))")
            }
            var index = 0
            while index < chars.count {
                guard let high = value(chars[index]), let low = value(chars[index + 1]) else {
                    throw CodecError("\(PayloadText.quoted(payload)) is not hex: invalid digit in \(PayloadText.quoted(group))")
                }
                bytes.append(high << 4 | low)
                index += 2
            }
        }
        return bytes
    }

    private static func value(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
