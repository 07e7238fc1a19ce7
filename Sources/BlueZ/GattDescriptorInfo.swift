import Bluetooth
import DBus

/// A snapshot of one remote `org.bluez.GattDescriptor1`.
public struct GattDescriptorInfo: Sendable, Equatable {
    public var path: String
    public var characteristicPath: String
    public var uuid: BluetoothUUID
    public var flags: [String]

    public init?(path: String, properties: [String: DBusValue]) {
        guard let uuid = properties["UUID"]?.string.flatMap(BluetoothUUID.init) else { return nil }
        self.path = path
        self.uuid = uuid
        characteristicPath = properties["Characteristic"]?.string ?? GattCharacteristicInfo.parent(of: path)
        flags = (properties["Flags"]?.array ?? []).compactMap(\.string)
    }
}
