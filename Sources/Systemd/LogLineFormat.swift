import Glibc
import Logging

extension SystemdLogHandler {
    /// syslog priorities as journald reads them from a `<N>` prefix.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// One event as the exact text written, newline included. Journal: every line of a multi-line message carries
    /// the prefix, so journald keeps its priority. Console: `2026-11-22T10:00:00.123Z info  [label] message k=v`.
    /// Metadata is sorted by key, so lines are stable and diffable.
    public static func formatLine(output: Output, level: Logger.Level, label: String, message: String,
                                  metadata: Logger.Metadata, timestamp: timespec) -> String {
        var line: String
        switch output {
        case .journal:
            let prefix = "<\(syslogPriority(level))>"
            line = prefix + message.replacing("\n", with: "\n" + prefix)
        case .console:
            let name = level.rawValue
            line = formatTimestamp(timestamp) + " " + name + String(repeating: " ", count: max(1, 6 - name.count))
                + "[" + label + "] " + message
        }
        for key in metadata.keys.sorted() {
            line += " " + key + "=" + formatValue(metadata[key]!)
        }
        return line + "\n"
    }

    /// RFC 3339 UTC with milliseconds.
    static func formatTimestamp(_ time: timespec) -> String {
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(Int(parts.tm_year) + 1900, 4) + "-" + pad(Int(parts.tm_mon) + 1, 2) + "-" + pad(Int(parts.tm_mday), 2)
            + "T" + pad(Int(parts.tm_hour), 2) + ":" + pad(Int(parts.tm_min), 2) + ":" + pad(Int(parts.tm_sec), 2)
            + "." + pad(Int(time.tv_nsec) / 1_000_000, 3) + "Z"
    }

    /// Plain values stay bare; anything with spaces, quotes, `=` or control characters is quoted and escaped, so a
    /// line always splits back into the same key=value pairs.
    static func formatValue(_ value: Logger.MetadataValue) -> String {
        let text: String
        switch value {
        case .string(let string): text = string
        case .stringConvertible(let convertible): text = convertible.description
        case .array(let values): text = "[" + values.map(formatValue).joined(separator: ",") + "]"
        case .dictionary(let values):
            text = "{" + values.keys.sorted().map { "\($0):\(formatValue(values[$0]!))" }.joined(separator: ",") + "}"
        }
        let needsQuotes = text.isEmpty || text.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.properties.generalCategory == .control
        }
        guard needsQuotes else { return text }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case "\r": quoted += "\\r"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
