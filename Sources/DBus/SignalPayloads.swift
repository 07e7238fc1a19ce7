/// org.freedesktop.DBus.Properties.PropertiesChanged (sa{sv}as).
public struct PropertiesChanged: Sendable {
    public var path: String
    public var interface: String
    public var changed: [String: DBusValue]
    public var invalidated: [String]

    public init?(_ message: DBusMessage) {
        guard message.kind == .signal, message.member == "PropertiesChanged",
              message.interface == "org.freedesktop.DBus.Properties", let path = message.path,
              message.body.count >= 3, case .string(let interface) = message.body[0],
              let changed = message.body[1].stringDict, let invalidated = message.body[2].array
        else { return nil }
        self.path = path
        self.interface = interface
        self.changed = changed
        self.invalidated = invalidated.compactMap(\.string)
    }
}

/// org.freedesktop.DBus.ObjectManager.InterfacesAdded (oa{sa{sv}}).
public struct InterfacesAdded: Sendable {
    public var objectPath: String
    public var interfaces: [String: [String: DBusValue]]

    public init?(_ message: DBusMessage) {
        guard message.kind == .signal, message.member == "InterfacesAdded",
              message.interface == "org.freedesktop.DBus.ObjectManager",
              message.body.count >= 2, case .objectPath(let objectPath) = message.body[0],
              let interfaces = Self.interfaces(message.body[1])
        else { return nil }
        self.objectPath = objectPath
        self.interfaces = interfaces
    }

    /// a{sa{sv}} → interface → properties (variant layer stripped).
    static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]]? {
        guard case .dictionary("s", _, let entries) = value else { return nil }
        var result = [String: [String: DBusValue]](minimumCapacity: entries.count)
        for entry in entries {
            guard case .string(let name) = entry.key, let properties = entry.value.stringDict else { return nil }
            result[name] = properties
        }
        return result
    }
}

/// org.freedesktop.DBus.ObjectManager.InterfacesRemoved (oas).
public struct InterfacesRemoved: Sendable {
    public var objectPath: String
    public var interfaces: [String]

    public init?(_ message: DBusMessage) {
        guard message.kind == .signal, message.member == "InterfacesRemoved",
              message.interface == "org.freedesktop.DBus.ObjectManager",
              message.body.count >= 2, case .objectPath(let objectPath) = message.body[0],
              let interfaces = message.body[1].array
        else { return nil }
        self.objectPath = objectPath
        self.interfaces = interfaces.compactMap(\.string)
    }
}

/// org.freedesktop.DBus.NameOwnerChanged (sss); an empty owner means none.
public struct NameOwnerChanged: Sendable {
    public var name: String
    public var oldOwner: String
    public var newOwner: String

    public init?(_ message: DBusMessage) {
        guard message.kind == .signal, message.member == "NameOwnerChanged",
              message.interface == "org.freedesktop.DBus", message.body.count >= 3,
              case .string(let name) = message.body[0], case .string(let oldOwner) = message.body[1],
              case .string(let newOwner) = message.body[2]
        else { return nil }
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }
}
