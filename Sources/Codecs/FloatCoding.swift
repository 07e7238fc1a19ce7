/// The IEEE 754 codecs (`float32`, `float64`, and their `be` variants).
enum FloatCoding {
    static func decodeFloat(_ bytes: UnsafeRawBufferPointer, kind: CodecKind, to out: inout UTF8Buffer) throws(CodecError) {
        NumberFormatting.write(Float(bitPattern: try ByteOrder.load(bytes, as: UInt32.self, kind: kind)), to: &out)
    }

    static func decodeDouble(_ bytes: UnsafeRawBufferPointer, kind: CodecKind, to out: inout UTF8Buffer) throws(CodecError) {
        NumberFormatting.write(Double(bitPattern: try ByteOrder.load(bytes, as: UInt64.self, kind: kind)), to: &out)
    }

    static func encodeFloat(_ payload: String, kind: CodecKind) throws(CodecError) -> [UInt8] {
        let value: Float = try parse(payload, kind: kind)
        return ByteOrder.store(value.bitPattern, kind: kind)
    }

    static func encodeDouble(_ payload: String, kind: CodecKind) throws(CodecError) -> [UInt8] {
        let value: Double = try parse(payload, kind: kind)
        return ByteOrder.store(value.bitPattern, kind: kind)
    }

    /// Decimal notation (with optional exponent), or the spellings decode produces for non-finite values
    /// ("nan", "inf", "-inf"), so every decoded payload encodes back. A finite number too large for the
    /// type is an error instead of silently becoming infinity.
    private static func parse<F: BinaryFloatingPoint & LosslessStringConvertible>(_ payload: String, kind: CodecKind) throws(CodecError) -> F {
        let text = PayloadText.trimmed(payload)
        switch text.lowercased() {
        case "nan": return F.nan
        case "inf", "+inf", "infinity", "+infinity": return F.infinity
        case "-inf", "-infinity": return -F.infinity
        default: break
        }
        guard isDecimal(text), let value = F(String(text)) else {
            throw CodecError("\(PayloadText.quoted(payload)) is not a decimal number")
        }
        guard value.isFinite else {
            throw CodecError("\(text) is out of range for \(kind)")
        }
        return value
    }

    /// `[-+]? (digits [. digits?] | . digits) ([eE] [-+]? digits)?` — no hex floats, no "nan" spelled oddly.
    static func isDecimal(_ text: Substring) -> Bool {
        var chars = Array(text.utf8)[...]
        func digits() -> Int {
            var count = 0
            while let char = chars.first, char >= UInt8(ascii: "0"), char <= UInt8(ascii: "9") {
                chars = chars.dropFirst()
                count += 1
            }
            return count
        }
        if chars.first == UInt8(ascii: "-") || chars.first == UInt8(ascii: "+") { chars = chars.dropFirst() }
        var mantissa = digits()
        if chars.first == UInt8(ascii: ".") {
            chars = chars.dropFirst()
            mantissa += digits()
        }
        guard mantissa > 0 else { return false }
        if chars.first == UInt8(ascii: "e") || chars.first == UInt8(ascii: "E") {
            chars = chars.dropFirst()
            if chars.first == UInt8(ascii: "-") || chars.first == UInt8(ascii: "+") { chars = chars.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return chars.isEmpty
    }
}
