/// Fixed-width little/big-endian byte assembly shared by the integer and float codecs.
enum ByteOrder {
    /// Characteristic values are little-endian unless the codec's name says otherwise (`…be`).
    static func isBigEndian(_ kind: CodecKind) -> Bool {
        kind.rawValue.hasSuffix("be")
    }

    /// A value needs exactly its width: a short or long read means the codec does not fit the characteristic,
    /// and guessing (padding, truncating) would publish wrong numbers.
    static func load<T: FixedWidthInteger>(_ bytes: [UInt8], as type: T.Type, kind: CodecKind) throws(CodecError) -> T {
        let width = T.bitWidth / 8
        guard bytes.count == width else {
            throw CodecError("codec \(kind) needs exactly \(width) byte\(width == 1 ? "" : "s"), got \(bytes.count)")
        }
        let ordered = isBigEndian(kind) ? bytes : bytes.reversed()
        var value: T = 0
        for byte in ordered {
            value = value << 8 | T(truncatingIfNeeded: byte)
        }
        return value
    }

    static func store<T: FixedWidthInteger>(_ value: T, kind: CodecKind) -> [UInt8] {
        let width = T.bitWidth / 8
        let littleEndian = (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return isBigEndian(kind) ? littleEndian.reversed() : littleEndian
    }
}
