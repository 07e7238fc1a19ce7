extension JSONValue {
    /// Parses one JSON text (RFC 8259). Integers that fit `Int` become `.int`, other numbers `.double`.
    /// Lone UTF-16 surrogates in `\u` escapes, which a Swift string cannot hold, become U+FFFD.
    /// - Throws: `CodecError` naming the byte offset of the first problem.
    public static func parse(_ text: String) throws(CodecError) -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.atEnd else { throw parser.error("unexpected content after the JSON value") }
        return value
    }
}

/// A recursive-descent parser over UTF-8 bytes; nesting is bounded so hostile input cannot exhaust the stack.
struct JSONParser {
    static let maxDepth = 256

    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    var atEnd: Bool { offset >= bytes.count }

    private var current: UInt8? { atEnd ? nil : bytes[offset] }

    func error(_ message: String) -> CodecError {
        CodecError("invalid JSON at offset \(offset): \(message)")
    }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            offset += 1
        }
    }

    mutating func value(depth: Int) throws(CodecError) -> JSONValue {
        guard depth < Self.maxDepth else { throw error("nested too deeply") }
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws(CodecError) {
        let expected = Array(word.utf8)
        guard bytes.count - offset >= expected.count,
              bytes[offset..<offset + expected.count].elementsEqual(expected) else {
            throw error("expected \(word)")
        }
        offset += expected.count
    }

    private mutating func object(depth: Int) throws(CodecError) -> JSONValue {
        offset += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            offset += 1
            skipWhitespace()
            members.append((key, try value(depth: depth + 1)))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"): offset += 1; return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(CodecError) -> JSONValue {
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"): offset += 1; return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func string() throws(CodecError) -> String {
        offset += 1
        var scalars = String.UnicodeScalarView()
        var runStart = offset
        func flushRun(_ parser: JSONParser, upTo end: Int) {
            scalars.append(contentsOf: String(decoding: parser.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard let byte = current else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                flushRun(self, upTo: offset)
                offset += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                flushRun(self, upTo: offset)
                offset += 1
                scalars.append(try escape())
                runStart = offset
            case 0x00..<0x20:
                throw error("unescaped control character in string")
            default:
                offset += 1
            }
        }
    }

    private mutating func escape() throws(CodecError) -> Unicode.Scalar {
        guard let byte = current else { throw error("unterminated escape") }
        offset += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hex4()
            if (0xD800..<0xDC00).contains(unit), bytes.count - offset >= 6,
               bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") {
                let saved = offset
                offset += 2
                let low = try hex4()
                if (0xDC00..<0xE000).contains(low) {
                    return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
                }
                offset = saved
            }
            return Unicode.Scalar(unit) ?? "\u{FFFD}"
        default:
            offset -= 1
            throw error("invalid escape")
        }
    }

    private mutating func hex4() throws(CodecError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(CodecError) -> JSONValue {
        let start = offset
        var isInteger = true
        if current == UInt8(ascii: "-") { offset += 1 }
        if current == UInt8(ascii: "0") {
            offset += 1
        } else {
            guard digits() > 0 else { throw error("invalid number") }
        }
        if current == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard digits() > 0 else { throw error("invalid number: digits expected after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw error("invalid number: digits expected in exponent") }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        // "-0" stays a double: an integer has no negative zero, and the writer spells -0.0 as "-0", so reading
        // it as the integer 0 would change the document on a round trip.
        if isInteger, let value = Int(text), value != 0 || bytes[start] != UInt8(ascii: "-") { return .int(value) }
        guard let value = Double(text) else { throw error("invalid number") }
        return .double(value)
    }

    private mutating func digits() -> Int {
        var count = 0
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            offset += 1
            count += 1
        }
        return count
    }
}
