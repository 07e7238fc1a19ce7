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

    /// `text` quoted for an error message: cut and escaped, so a payload cannot flood the log or forge a line in it.
    static func quoted(_ text: some StringProtocol) -> String {
        "\"\(ReportText.escaped(text, maxBytes: 64))\""
    }
}
