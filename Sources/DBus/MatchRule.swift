/// A bus match rule, both as the string sent with AddMatch and as a local filter for incoming messages.
public struct MatchRule: Sendable, Hashable {
    public var type: String = "signal"
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?
    public var pathNamespace: String?
    public var arg0: String?

    public init(type: String = "signal", sender: String? = nil, interface: String? = nil, member: String? = nil,
                path: String? = nil, pathNamespace: String? = nil, arg0: String? = nil) {
        self.type = type
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule in the bus's syntax, values quoted (an apostrophe becomes `'\''`, as the spec prescribes).
    public var ruleString: String {
        var parts = ["type=" + Self.quote(type)]
        let fields: [(String, String?)] = [
            ("sender", sender), ("interface", interface), ("member", member),
            ("path", path), ("path_namespace", pathNamespace), ("arg0", arg0),
        ]
        for case (let key, let value?) in fields {
            parts.append(key + "=" + Self.quote(value))
        }
        return parts.joined(separator: ",")
    }

    /// The bus matches `sender` against well-known names and their unique owners; locally only a unique-name
    /// sender (or an exact textual match) can be checked, so a well-known sender is accepted here.
    /// `DBusConnection` adds the owner check for well-known names itself.
    public func matches(_ message: DBusMessage) -> Bool {
        guard Self.kindMatches(type, message.kind) else { return false }
        if let sender, sender.hasPrefix(":"), message.sender != sender { return false }
        return matchesHeader(message) && matchesArguments(message)
    }

    /// interface, member, path and path_namespace: what can be checked before the body is decoded.
    func matchesHeader(_ message: DBusMessage) -> Bool {
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let messagePath = message.path else { return false }
            if pathNamespace != "/" && messagePath != pathNamespace
                && !(messagePath.hasPrefix(pathNamespace) && messagePath.utf8.dropFirst(pathNamespace.utf8.count).first == UInt8(ascii: "/")) {
                return false
            }
        }
        return true
    }

    func matchesArguments(_ message: DBusMessage) -> Bool {
        if let arg0 {
            // The bus matches argN against STRING arguments only.
            guard case .string(let first)? = message.body.first, first == arg0 else { return false }
        }
        return true
    }

    static func kindMatches(_ type: String, _ kind: DBusMessage.Kind) -> Bool {
        switch type {
        case "signal": kind == .signal
        case "method_call": kind == .methodCall
        case "method_return": kind == .methodReturn
        case "error": kind == .error
        default: false
        }
    }

    private static func quote(_ value: String) -> String {
        "'" + value.replacing("'", with: "'\\''") + "'"
    }
}
