/// A decoded D-Bus message: header fields copied out of libdbus, body decoded once.
public struct DBusMessage: Sendable {
    public enum Kind: Sendable { case methodCall, methodReturn, error, signal }

    public var kind: Kind
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var sender: String?
    public var destination: String?
    public var body: [DBusValue]

    public init(kind: Kind, path: String? = nil, interface: String? = nil, member: String? = nil,
                errorName: String? = nil, sender: String? = nil, destination: String? = nil,
                body: [DBusValue] = []) {
        self.kind = kind
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.sender = sender
        self.destination = destination
        self.body = body
    }
}
