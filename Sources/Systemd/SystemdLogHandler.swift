import Glibc
import Logging

/// swift-log handler for a systemd service: one `write()` to stderr per event, so lines from different threads never
/// interleave, formatted for journald (`<6>message key=value`) or for people (timestamps, level, label).
public struct SystemdLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    public let output: Output

    public init(label: String, logLevel: Logger.Level = .info, output: Output = SystemdLogHandler.detectOutput()) {
        self.label = label
        self.logLevel = logLevel
        self.output = output
        metadataProvider = LoggingSystem.metadataProvider
    }

    /// Installs this handler for every `Logger` in the process; call once, early (the CLI passes `--log-level`).
    public static func bootstrap(logLevel: Logger.Level) {
        let output = detectOutput()
        LoggingSystem.bootstrap { label in SystemdLogHandler(label: label, logLevel: logLevel, output: output) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { merged.merge(provided) { _, new in new } }
        if let own = event.metadata, !own.isEmpty { merged.merge(own) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        var now = timespec()
        if output == .console { clock_gettime(CLOCK_REALTIME, &now) }
        let line = Self.formatLine(output: output, level: event.level, label: label, message: event.message.description,
                                   metadata: merged, timestamp: now)
        Self.writeToStderr(line)
    }

    private static func writeToStderr(_ line: String) {
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
