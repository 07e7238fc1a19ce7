/// The `hex` codec: bytes as lower-case hex digits.
public enum Hex {
    /// Lower case, no separators: one canonical spelling, so retained payloads compare textually.
    ///
    /// Written straight into the string's storage: this runs for every notification of a `hex` channel, and an
    /// intermediate byte array (one allocation and one free) and a table behind a lazy global were most of its cost.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// `encode` of bytes the caller only lends (a notification as read, see `Codec.decode(_:)`).
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: bytes.count * 2) { write(bytes, into: $0) }
    }

    /// The text `encode` returns, as UTF-8 in a buffer on the stack (on the heap past Swift's bound for that), lent
    /// to `body`: valid only during the call. A notification's way out (`ChannelPublisher`) makes no `String` for
    /// it, which cost an allocation, a UTF-8 check and a free per value. Not generic: called from another module, a
    /// generic one is not specialised, and its temporary allocation then asked for `Result`'s metadata on every call.
    public static func withEncoded(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count * 2) { out in
            body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[..<write(bytes, into: out)]))
        }
    }

    /// `encode`'s text appended to `out`.
    public static func encode(_ bytes: UnsafeRawBufferPointer, to out: inout UTF8Buffer) {
        out.appendUninitialized(count: bytes.count * 2) { write(bytes, into: $0) }
    }

    /// Two digits per byte into `out` (room for `2 × bytes.count`), looked up in a constant table through a moving
    /// pointer: the index arithmetic (overflow-checked) and the branch per digit were most of the encoding's
    /// instructions, about 20 per byte.
    private static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard var target = out.baseAddress else { return 0 }
        let digits = ("0123456789abcdef" as StaticString).utf8Start
        for byte in bytes {
            target[0] = digits[Int(truncatingIfNeeded: byte &>> 4)]
            target[1] = digits[Int(truncatingIfNeeded: byte & 0xF)]
            target += 2
        }
        return bytes.count &* 2
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
