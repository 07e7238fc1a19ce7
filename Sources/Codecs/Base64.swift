/// The `base64` codec: RFC 4648 standard alphabet with `=` padding. Also the text form of the ESPHome proxy's key
/// (docs/configuration.md#esphome_proxy), hence `package`.
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    static func encode(_ bytes: UnsafeRawBufferPointer, to out: inout UTF8Buffer) {
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = bytes[index]
            let b1 = remaining > 1 ? bytes[index + 1] : 0
            let b2 = remaining > 2 ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(remaining > 1 ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(remaining > 2 ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
    }

    /// Strict apart from surrounding whitespace and omitted padding (both unambiguous): other alphabets
    /// (`-_`), embedded whitespace, misplaced `=` and non-zero leftover bits are rejected, because silently
    /// accepting them would write bytes the sender did not mean.
    package static func decode(_ payload: String) throws(CodecError) -> [UInt8] {
        var chars = Array(PayloadText.trimmed(payload).utf8)
        let invalid = CodecError("\(PayloadText.quoted(payload)) is not valid base64")
        var padding = 0
        while chars.last == UInt8(ascii: "=") {
            chars.removeLast()
            padding += 1
        }
        guard padding <= 2 else { throw invalid }
        if padding > 0, (chars.count + padding) % 4 != 0 { throw invalid }
        guard chars.count % 4 != 1 else { throw invalid }
        var sextets: [UInt8] = []
        sextets.reserveCapacity(chars.count)
        for char in chars {
            let value = reverse[Int(char)]
            guard value != 0xFF else { throw invalid }
            sextets.append(value)
        }
        if padding > 0, padding != (4 - sextets.count % 4) % 4 { throw invalid }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(sextets.count * 3 / 4)
        var index = 0
        while index + 4 <= sextets.count {
            let s = sextets[index..<index + 4].map(UInt32.init)
            let word = s[0] << 18 | s[1] << 12 | s[2] << 6 | s[3]
            bytes.append(UInt8(truncatingIfNeeded: word >> 16))
            bytes.append(UInt8(truncatingIfNeeded: word >> 8))
            bytes.append(UInt8(truncatingIfNeeded: word))
            index += 4
        }
        switch sextets.count - index {
        case 2:
            guard sextets[index + 1] & 0x0F == 0 else { throw invalid }
            bytes.append(sextets[index] << 2 | sextets[index + 1] >> 4)
        case 3:
            guard sextets[index + 2] & 0x03 == 0 else { throw invalid }
            bytes.append(sextets[index] << 2 | sextets[index + 1] >> 4)
            bytes.append(sextets[index + 1] << 4 | sextets[index + 2] >> 2)
        default:
            break
        }
        return bytes
    }

    /// `bytes` as base64 text, padded.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out = UTF8Buffer(capacity: (bytes.count + 2) / 3 * 4)
        bytes.withUnsafeBytes { encode($0, to: &out) }
        return out.string
    }

    /// The bytes of `text`, or nil when it is not base64 (no message: callers decoding a secret must not echo it).
    package static func decodeIfValid(_ text: String) -> [UInt8]? {
        do throws(CodecError) {
            return try decode(text)
        } catch {
            return nil
        }
    }
}
