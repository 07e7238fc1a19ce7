/// A D-Bus error reply or a local failure. Local timeouts use org.freedesktop.DBus.Error.NoReply,
/// a lost connection org.freedesktop.DBus.Error.Disconnected (as libdbus itself does).
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    public static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    public static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let nameHasNoOwnerName = "org.freedesktop.DBus.Error.NameHasNoOwner"
    /// The calling task was cancelled (not a D-Bus standard name: no standard one exists).
    public static let cancelledName = "org.gattbridge.Error.Cancelled"

    static func disconnected(_ message: String = "The connection is closed") -> DBusError {
        DBusError(name: disconnectedName, message: message)
    }

    static func invalidArgs(_ message: String) -> DBusError {
        DBusError(name: invalidArgsName, message: message)
    }

    static func unexpectedReply(_ what: String, _ body: [DBusValue]) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.InvalidSignature",
                  message: "\(what): unexpected reply signature '\(body.map(\.signature).joined())'")
    }
}
