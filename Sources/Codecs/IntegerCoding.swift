/// The integer codecs (`uint8` … `int32be`): decimal text ⇄ fixed-width two's-complement bytes.
enum IntegerCoding {
    /// The decimal text of the value, appended to `out`.
    static func decode<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as type: T.Type, kind: CodecKind,
                                             to out: inout UTF8Buffer) throws(CodecError) {
        out.append(integer: try decode(bytes, as: type, kind: kind))
    }

    static func decode<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, as type: T.Type, kind: CodecKind) throws(CodecError) -> T {
        // Loading through the unsigned bit pattern keeps sign extension out of the shifting.
        let pattern = try ByteOrder.load(bytes, as: T.Magnitude.self, kind: kind)
        return T(truncatingIfNeeded: pattern)
    }

    /// Decimal only, optionally signed; out-of-range values are errors rather than wrapped.
    static func encode<T: FixedWidthInteger>(_ payload: String, as type: T.Type, kind: CodecKind) throws(CodecError) -> [UInt8] {
        let text = PayloadText.trimmed(payload)
        guard isDecimalInteger(text) else {
            throw CodecError("\(PayloadText.quoted(payload)) is not a decimal integer")
        }
        guard let value = T(text, radix: 10) else {
            throw CodecError("\(text) is out of range for \(kind) (\(T.min)...\(T.max))")
        }
        return ByteOrder.store(value, kind: kind)
    }

    static func isDecimalInteger(_ text: Substring) -> Bool {
        var digits = text
        if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
