import Bluetooth

/// Helpers for BlueZ's object path layout, `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF/service000a/char000b/desc000d`.
public enum ObjectPath {
    /// The path BlueZ gives a device of an adapter: `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    public static func device(adapter: String, address: BluetoothAddress) -> String {
        adapter + "/dev_" + String(address.description.map { $0 == ":" ? "_" : $0 })
    }

    /// The device path a GATT object lives under, or the path itself for a device.
    static func device(of path: String) -> String? {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = components.firstIndex(where: { $0.hasPrefix("dev_") }) else { return nil }
        return components[...index].joined(separator: "/")
    }

    /// The adapter path a device or GATT object lives under ("/org/bluez/hci0").
    static func adapter(of path: String) -> String? {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard let index = components.firstIndex(where: { $0.hasPrefix("dev_") }), index > 0 else { return nil }
        return components[..<index].joined(separator: "/")
    }

    /// The last component: "hci0" for an adapter.
    static func lastComponent(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// True when `path` is `ancestor` or below it.
    static func isDescendant(_ path: String, of ancestor: String) -> Bool {
        path == ancestor || path.hasPrefix(ancestor + "/")
    }
}
