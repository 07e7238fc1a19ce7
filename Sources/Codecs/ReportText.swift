/// Text from outside (MQTT payloads, topics, device data) made safe to quote in a log line or a report: control
/// characters are escaped (`\n`, `\r`, `\t`, `\xNN`, and `\u{…}` for line separators), so a payload cannot forge a
/// line of its own in the journal, and the text is cut so a large payload cannot blow up every report (docs/security.md).
/// Backslashes stay as they are, so escaping text that was already escaped (a codec error quoting a payload, then
/// the report quoting the error) changes nothing.
public enum ReportText {
    /// `text` escaped, keeping at most `maxBytes` UTF-8 bytes of the original (never cutting a character), with
    /// "…" when something was cut.
    public static func escaped(_ text: some StringProtocol, maxBytes: Int = 64) -> String {
        var out = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            if used + size > maxBytes {
                out += "…"
                break
            }
            used += size
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x00..<0x20, 0x7F..<0xA0:
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            case 0x2028, 0x2029, 0x85:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Bytes as received: invalid UTF-8 shows as U+FFFD.
    public static func escaped(_ bytes: [UInt8], maxBytes: Int = 64) -> String {
        escaped(String(decoding: bytes.prefix(maxBytes + 4), as: UTF8.self), maxBytes: maxBytes)
    }
}
