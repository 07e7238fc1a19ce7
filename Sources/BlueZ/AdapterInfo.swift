import Bluetooth
import DBus

/// A snapshot of one `org.bluez.Adapter1` object.
public struct AdapterInfo: Sendable, Equatable {
    public var path: String
    /// "hci0": the last path component, which is how users name adapters.
    public var name: String
    public var address: BluetoothAddress?
    public var alias: String?
    public var powered: Bool
    public var discovering: Bool

    public init(path: String, properties: [String: DBusValue]) {
        self.path = path
        name = ObjectPath.lastComponent(of: path)
        address = properties["Address"]?.string.flatMap(BluetoothAddress.init)
        alias = properties["Alias"]?.string
        powered = properties["Powered"]?.bool ?? false
        discovering = properties["Discovering"]?.bool ?? false
    }
}
