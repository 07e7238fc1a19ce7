import Bluetooth
import DBus

/// A snapshot of one remote `org.bluez.GattService1`.
public struct GattServiceInfo: Sendable, Equatable {
    public var path: String
    public var devicePath: String
    public var uuid: BluetoothUUID
    public var primary: Bool

    public init?(path: String, properties: [String: DBusValue]) {
        guard let uuid = properties["UUID"]?.string.flatMap(BluetoothUUID.init) else { return nil }
        self.path = path
        self.uuid = uuid
        devicePath = properties["Device"]?.string ?? ObjectPath.device(of: path) ?? ""
        primary = properties["Primary"]?.bool ?? true
    }
}
