extension JSONValue {
    /// Compact JSON text (no insignificant whitespace). Non-finite doubles, which JSON cannot express, are
    /// written as `null`.
    public var serialized: String {
        var out = UTF8Buffer()
        write(to: &out)
        return out.string
    }

    /// `serialized`'s bytes appended to `out`, for callers that publish bytes and keep their buffer.
    public func write(to out: inout UTF8Buffer) {
        switch self {
        case .null: out.append("null")
        case .bool(let value): out.append(value ? "true" : "false")
        case .int(let value): out.append(integer: value)
        case .double(let value): NumberFormatting.writeJSON(value, to: &out)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            for member in members {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                Self.writeString(member.0, to: &out)
                out.append(UInt8(ascii: ":"))
                member.1.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Escapes what JSON requires (quote, backslash, C0 controls) plus U+2028/U+2029, which are legal JSON
    /// but end lines in JavaScript, where Home Assistant's frontend may see these payloads.
    ///
    /// Works on the string's UTF-8 as it is stored: everything but those is copied byte for byte, and a `String`'s
    /// UTF-8 is valid, so the only multi-byte sequences to look at are U+2028/U+2029's E2 80 A8/A9.
    static func writeString(_ value: String, to out: inout UTF8Buffer) {
        out.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var index = 0
            let count = utf8.count
            while index < count {
                let byte = utf8[index]
                switch byte {
                case UInt8(ascii: "\""): out.append("\\\"")
                case UInt8(ascii: "\\"): out.append("\\\\")
                case 0x0A: out.append("\\n")
                case 0x0D: out.append("\\r")
                case 0x09: out.append("\\t")
                case 0x08: out.append("\\b")
                case 0x0C: out.append("\\f")
                case 0x00..<0x20:
                    out.append("\\u00")
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0xF))
                case 0xE2 where index + 2 < count && utf8[index + 1] == 0x80
                    && (utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9):
                    out.append(utf8[index + 2] == 0xA8 ? "\\u2028" : "\\u2029")
                    index += 2
                default:
                    out.append(byte)
                }
                index += 1
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
