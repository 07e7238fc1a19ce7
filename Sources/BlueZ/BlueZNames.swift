/// D-Bus names used by BlueZ, in one place so typos cannot split the mirror.
enum BlueZNames {
    static let service = "org.bluez"
    static let root = "/"
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let gattDescriptor = "org.bluez.GattDescriptor1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let bus = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"
}
