import Adverts
import BlueZ
import Bluetooth
import Codecs

/// The devices one scan has seen, and how they are shown: sorted by RSSI (strongest first, unknown last).
public struct ScanResults: Sendable {
    public let adapterPath: String
    /// Only devices advertising one of these (empty: all). BlueZ filters too, but not when another client's
    /// unfiltered discovery is running at the same time.
    public let services: [BluetoothUUID]
    public private(set) var devices: [String: DeviceInfo] = [:]
    /// What each device's last broadcast says (by object path), decoded once when it changes; absent when nothing
    /// decodes.
    public private(set) var adverts: [String: AdvertResult] = [:]

    /// Properties that change only when an advertisement arrives, so a change means "seen now".
    public static let advertisementProperties: Set<String> = [
        "RSSI", "TxPower", "ManufacturerData", "ServiceData", "UUIDs", "Name", "AdvertisingFlags", "AdvertisingData",
    ]

    public init(adapterPath: String, services: [BluetoothUUID]) {
        self.adapterPath = adapterPath
        self.services = services
    }

    /// A device BlueZ already knew when the scan started counts only if it has a current RSSI (BlueZ drops RSSI
    /// when discovery ends, so an RSSI means another discovery is seeing it right now).
    public mutating func seed(_ device: DeviceInfo) {
        if device.rssi != nil { record(device) }
    }

    /// Returns true when what is shown changed.
    public mutating func apply(_ event: BlueZEvent) -> Bool {
        switch event {
        case .deviceAdded(let device):
            return record(device)
        case .deviceChanged(let device, let changed):
            if devices[device.path] != nil || !changed.isDisjoint(with: Self.advertisementProperties) {
                return record(device)
            }
            return false
        case .deviceRemoved(let path, _):
            adverts[path] = nil
            return devices.removeValue(forKey: path) != nil
        case .bluezVanished:
            let had = !devices.isEmpty
            devices = [:]
            adverts = [:]
            return had
        default:
            return false
        }
    }

    @discardableResult
    private mutating func record(_ device: DeviceInfo) -> Bool {
        guard device.adapterPath == adapterPath else { return false }
        guard services.isEmpty || device.uuids.contains(where: services.contains) else {
            adverts[device.path] = nil
            return devices.removeValue(forKey: device.path) != nil
        }
        let old = devices.updateValue(device, forKey: device.path)
        guard old != device else { return false }
        adverts[device.path] = ScanMeasurements.decode(device)
        return true
    }

    public var sorted: [DeviceInfo] {
        devices.values.sorted { a, b in
            switch (a.rssi, b.rssi) {
            case let (x?, y?) where x != y: x > y
            case (_?, nil): true
            case (nil, _?): false
            default: a.address < b.address
            }
        }
    }

    // MARK: Output

    /// The `scan --json` array, also the `data` of the bridge API's `scan` (docs/cli.md, docs/bridge-api.md).
    public var json: JSONValue {
        .array(sorted.map { device in
            .object([
                ("address", .string(device.address.description)),
                ("address_type", device.addressType.map(JSONValue.string) ?? .null),
                ("name", device.name.map(JSONValue.string) ?? .null),
                ("rssi", device.rssi.map(JSONValue.int) ?? .null),
                ("services", .array(device.uuids.map { .string($0.uuidString) })),
                ("paired", .bool(device.paired)),
                ("bonded", .bool(device.bonded)),
                ("measurements", ScanMeasurements.json(adverts[device.path])),
            ])
        })
    }
}
