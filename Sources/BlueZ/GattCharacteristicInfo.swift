import Bluetooth
import DBus

/// A snapshot of one remote `org.bluez.GattCharacteristic1`.
public struct GattCharacteristicInfo: Sendable, Equatable {
    public var path: String
    public var servicePath: String
    public var uuid: BluetoothUUID
    /// BlueZ's flag strings: "read", "write", "write-without-response", "notify", "indicate", …
    public var flags: [String]
    public var notifying: Bool
    /// Present only when BlueZ exports it (newer versions, BlueZoo).
    public var mtu: Int?
    /// Nil when the property is absent: BlueZ omits it when the characteristic cannot notify.
    public var notifyAcquired: Bool?
    /// Nil when absent: BlueZ omits it without "write-without-response".
    public var writeAcquired: Bool?

    public init?(path: String, properties: [String: DBusValue]) {
        guard let uuid = properties["UUID"]?.string.flatMap(BluetoothUUID.init) else { return nil }
        self.path = path
        self.uuid = uuid
        servicePath = properties["Service"]?.string ?? Self.parent(of: path)
        flags = (properties["Flags"]?.array ?? []).compactMap(\.string)
        notifying = properties["Notifying"]?.bool ?? false
        mtu = properties["MTU"]?.int
        notifyAcquired = properties["NotifyAcquired"]?.bool
        writeAcquired = properties["WriteAcquired"]?.bool
    }

    public var canRead: Bool { flags.contains("read") }
    public var canWrite: Bool { flags.contains("write") }
    public var canWriteWithoutResponse: Bool { flags.contains("write-without-response") }
    public var canNotify: Bool { flags.contains("notify") || flags.contains("indicate") }

    public var devicePath: String { ObjectPath.device(of: path) ?? "" }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[..<slash])
    }
}
