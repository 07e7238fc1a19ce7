/// Fixed-width little/big-endian byte assembly shared by the integer and float codecs.
enum ByteOrder {
    /// Characteristic values are little-endian unless the codec's name says otherwise (`…be`).
    /// A switch, not the name's suffix: this runs for every decoded value.
    static func isBigEndian(_ kind: CodecKind) -> Bool {
        switch kind {
        case .uint16be, .int16be, .uint32be, .int32be, .float32be, .float64be: true
        default: false
        }
    }

    /// A value needs exactly its width: a short or long read means the codec does not fit the characteristic,
    /// and guessing (padding, truncating) would publish wrong numbers.
    static func load<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as type: T.Type, kind: CodecKind) throws(CodecError) -> T {
        let width = T.bitWidth / 8
        guard bytes.count == width else {
            throw CodecError("codec \(kind) needs exactly \(width) byte\(width == 1 ? "" : "s"), got \(bytes.count)")
        }
        let value = bytes.loadUnaligned(as: T.self)
        return isBigEndian(kind) ? T(bigEndian: value) : T(littleEndian: value)
    }

    static func store<T: FixedWidthInteger>(_ value: T, kind: CodecKind) -> [UInt8] {
        let width = T.bitWidth / 8
        let littleEndian = (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return isBigEndian(kind) ? littleEndian.reversed() : littleEndian
    }
}
