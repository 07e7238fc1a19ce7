/// Helpers for reading MQTT payload text leniently where that cannot change its meaning.
enum PayloadText {
    /// Payloads typed by hand (`mosquitto_pub -m`, `echo`) often carry a trailing newline or stray spaces;
    /// for numbers, booleans, hex and base64 surrounding whitespace never carries meaning.
    static func trimmed(_ text: String) -> Substring {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return Substring(scalars[first...last])
    }

    /// `text` quoted for an error message, shortened so a huge payload does not flood the log.
    static func quoted(_ text: some StringProtocol) -> String {
        let limit = 40
        if text.count <= limit { return "\"\(text)\"" }
        return "\"\(text.prefix(limit))…\""
    }
}
