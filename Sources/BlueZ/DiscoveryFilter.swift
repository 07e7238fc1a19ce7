import Bluetooth
import DBus

/// Arguments of `Adapter1.SetDiscoveryFilter`.
public struct DiscoveryFilter: Sendable, Equatable {
    public enum Transport: String, Sendable { case auto, le, bredr }

    public var transport: Transport
    /// Only devices advertising one of these services (empty: any).
    public var uuids: [BluetoothUUID]
    /// Report every advertisement, not only changes (so RSSI and service data stay fresh).
    public var duplicateData: Bool
    /// An address prefix or name prefix; BlueZ ignores it when another client scans without one.
    public var pattern: String?
    public var rssi: Int?

    public init(transport: Transport = .le, uuids: [BluetoothUUID] = [], duplicateData: Bool = false,
                pattern: String? = nil, rssi: Int? = nil) {
        self.transport = transport
        self.uuids = uuids
        self.duplicateData = duplicateData
        self.pattern = pattern
        self.rssi = rssi
    }

    /// The `a{sv}` argument.
    public var dbusValue: DBusValue {
        var dict: [String: DBusValue] = [
            "Transport": .string(transport.rawValue),
            "DuplicateData": .bool(duplicateData),
        ]
        if !uuids.isEmpty { dict["UUIDs"] = .array("s", uuids.map { .string($0.uuidString) }) }
        if let pattern { dict["Pattern"] = .string(pattern) }
        if let rssi, let value = Int16(exactly: rssi) { dict["RSSI"] = .int16(value) }
        return .stringDict(dict)
    }
}
