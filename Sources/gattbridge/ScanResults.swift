import BlueZ
import Bluetooth
import Codecs

/// The devices one scan has seen, and how they are shown: sorted by RSSI (strongest first, unknown last).
struct ScanResults: Sendable {
    let adapterPath: String
    /// Only devices advertising one of these (empty: all). BlueZ filters too, but not when another client's
    /// unfiltered discovery is running at the same time.
    let services: [BluetoothUUID]
    private(set) var devices: [String: DeviceInfo] = [:]

    /// Properties that change only when an advertisement arrives, so a change means "seen now".
    static let advertisementProperties: Set<String> = [
        "RSSI", "TxPower", "ManufacturerData", "ServiceData", "UUIDs", "Name", "AdvertisingFlags", "AdvertisingData",
    ]

    init(adapterPath: String, services: [BluetoothUUID]) {
        self.adapterPath = adapterPath
        self.services = services
    }

    /// A device BlueZ already knew when the scan started counts only if it has a current RSSI (BlueZ drops RSSI
    /// when discovery ends, so an RSSI means another discovery is seeing it right now).
    mutating func seed(_ device: DeviceInfo) {
        if device.rssi != nil { record(device) }
    }

    /// Returns true when what is shown changed.
    mutating func apply(_ event: BlueZEvent) -> Bool {
        switch event {
        case .deviceAdded(let device):
            return record(device)
        case .deviceChanged(let device, let changed):
            if devices[device.path] != nil || !changed.isDisjoint(with: Self.advertisementProperties) {
                return record(device)
            }
            return false
        case .deviceRemoved(let path, _):
            return devices.removeValue(forKey: path) != nil
        case .bluezVanished:
            let had = !devices.isEmpty
            devices = [:]
            return had
        default:
            return false
        }
    }

    @discardableResult
    private mutating func record(_ device: DeviceInfo) -> Bool {
        guard device.adapterPath == adapterPath else { return false }
        guard services.isEmpty || device.uuids.contains(where: services.contains) else {
            return devices.removeValue(forKey: device.path) != nil
        }
        let old = devices.updateValue(device, forKey: device.path)
        return old != device
    }

    var sorted: [DeviceInfo] {
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

    var json: JSONValue {
        .array(sorted.map { device in
            .object([
                ("address", .string(device.address.description)),
                ("address_type", device.addressType.map(JSONValue.string) ?? .null),
                ("name", device.name.map(JSONValue.string) ?? .null),
                ("rssi", device.rssi.map(JSONValue.int) ?? .null),
                ("services", .array(device.uuids.map { .string($0.uuidString) })),
            ])
        })
    }

    /// The table, one string per line (no trailing newlines).
    var tableLines: [String] {
        let rows = sorted.map { device in
            [device.address.description, device.name ?? "-", device.rssi.map(String.init) ?? "-",
             device.uuids.map(UUIDNames.labelled).joined(separator: ", ")]
        }
        return TextTable.render(header: ["ADDRESS", "NAME", "RSSI", "SERVICES"], rows: rows, rightAligned: [2])
    }
}
