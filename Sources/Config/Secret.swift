/// A credential that must never reach a log line, an error message or a debugger dump.
///
/// Every printing path (`description`, `debugDescription`, `Mirror`, hence `print`, `dump` and string
/// interpolation of any struct containing it) shows a placeholder; only `value` gives the text.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let value: String

    public init(_ value: String) {
        self.value = value
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
