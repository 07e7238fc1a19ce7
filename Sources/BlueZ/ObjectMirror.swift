import DBus

/// The client-side copy of org.bluez's object tree (path → interface → properties) and the events each change implies.
///
/// Kept as a plain value so the bookkeeping can be tested without a bus.
struct ObjectMirror: Sendable {
    typealias Interfaces = [String: [String: DBusValue]]

    private(set) var objects: [String: Interfaces] = [:]

    /// The properties the typed views (`AdapterInfo`, `DeviceInfo`, the GATT infos) read, per interface; only
    /// these are stored. BlueZ sends twenty-odd properties per device and adapter (Modalias, Class, Icon, Roles,
    /// ExperimentalFeatures, …) and a dozen interfaces per adapter; kept as `[String: DBusValue]` they were most
    /// of the 6 KB the mirror held per broadcaster (docs/dev/MEMORY.md). Other interfaces are kept as present,
    /// with no properties. A characteristic's Value is not stored either: it changes on every notification and is
    /// routed to subscriptions instead.
    static let storedProperties: [String: Set<String>] = [
        BlueZNames.adapter: ["Address", "Alias", "Discovering", "Powered"],
        BlueZNames.device: ["Adapter", "Address", "AddressType", "AdvertisingData", "AdvertisingFlags", "Alias", "Bonded",
                            "Connected", "ManufacturerData", "Name", "Paired", "RSSI", "ServiceData", "ServicesResolved",
                            "Trusted", "TxPower", "UUIDs"],
        BlueZNames.gattService: ["Device", "Primary", "UUID"],
        BlueZNames.gattCharacteristic: ["Flags", "MTU", "NotifyAcquired", "Notifying", "Service", "UUID",
                                        "WriteAcquired"],
        BlueZNames.gattDescriptor: ["Characteristic", "Flags", "UUID"],
    ]

    static func isStored(_ interface: String, _ property: String) -> Bool {
        storedProperties[interface]?.contains(property) ?? false
    }

    /// Replaces everything with a GetManagedObjects snapshot.
    mutating func replace(with snapshot: [String: Interfaces]) -> [BlueZEvent] {
        var events = clear()
        for path in snapshot.keys.sorted() {
            events += interfacesAdded(path: path, interfaces: snapshot[path]!)
        }
        return events
    }

    /// Forgets everything, reporting each object as removed (deepest first).
    mutating func clear() -> [BlueZEvent] {
        var events: [BlueZEvent] = []
        for path in objects.keys.sorted(by: >) {
            events += interfacesRemoved(path: path, interfaces: Array(objects[path]!.keys))
        }
        return events
    }

    /// An interface the mirror already has (a signal replayed after a resync snapshot that included it) is
    /// reported as a change of the properties that differ, not as a second addition.
    mutating func interfacesAdded(path: String, interfaces: Interfaces) -> [BlueZEvent] {
        let previous = objects[path] ?? [:]
        var stored = previous
        for (interface, properties) in interfaces {
            stored[interface] = properties.filter { Self.isStored(interface, $0.key) }
        }
        objects[path] = stored
        var events: [BlueZEvent] = []
        if let properties = stored[BlueZNames.adapter], interfaces[BlueZNames.adapter] != nil {
            let adapter = AdapterInfo(path: path, properties: properties)
            if let old = previous[BlueZNames.adapter] {
                let changed = Self.differingKeys(old, properties)
                if !changed.isEmpty { events.append(.adapterChanged(adapter, changed: changed)) }
            } else {
                events.append(.adapterAdded(adapter))
            }
        }
        if let properties = stored[BlueZNames.device], interfaces[BlueZNames.device] != nil,
           let device = DeviceInfo(path: path, properties: properties) {
            if let old = previous[BlueZNames.device] {
                let changed = Self.differingKeys(old, properties)
                if !changed.isEmpty { events.append(.deviceChanged(device, changed: changed)) }
            } else {
                events.append(.deviceAdded(device))
            }
        }
        if Self.gattInterfaces.contains(where: { interfaces[$0] != nil && previous[$0] == nil }),
           let device = ObjectPath.device(of: path) {
            events.append(.gattAdded(path: path, devicePath: device))
        }
        return events
    }

    static func differingKeys(_ old: [String: DBusValue], _ new: [String: DBusValue]) -> Set<String> {
        Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
    }

    mutating func interfacesRemoved(path: String, interfaces: [String]) -> [BlueZEvent] {
        guard var stored = objects[path] else { return [] }
        var events: [BlueZEvent] = []
        for interface in interfaces {
            guard let properties = stored.removeValue(forKey: interface) else { continue }
            switch interface {
            case BlueZNames.adapter:
                events.append(.adapterRemoved(path: path))
            case BlueZNames.device:
                if let device = DeviceInfo(path: path, properties: properties) {
                    events.append(.deviceRemoved(path: path, address: device.address))
                }
            case _ where Self.gattInterfaces.contains(interface):
                if let device = ObjectPath.device(of: path) {
                    events.append(.gattRemoved(path: path, devicePath: device))
                }
            default:
                break
            }
        }
        objects[path] = stored.isEmpty ? nil : stored
        // A vanished device or adapter takes its children along even if BlueZ (or BlueZoo) forgot to say so.
        if interfaces.contains(BlueZNames.device) || interfaces.contains(BlueZNames.adapter) {
            for child in objects.keys.filter({ $0.hasPrefix(path + "/") }).sorted(by: >) {
                events += interfacesRemoved(path: child, interfaces: Array(objects[child]!.keys))
            }
        }
        return events
    }

    mutating func propertiesChanged(path: String, interface: String, changed: [String: DBusValue],
                                    invalidated: [String]) -> [BlueZEvent] {
        guard objects[path]?[interface] != nil else { return [] }
        // Changed in place: a copy taken out and stored back would copy the whole dictionary on every change (a
        // broadcaster's RSSI and service data change about once a second).
        var names = Set<String>()
        for (name, value) in changed where Self.isStored(interface, name) {
            objects[path]![interface]![name] = value
            names.insert(name)
        }
        for name in invalidated where Self.isStored(interface, name) {
            objects[path]![interface]![name] = nil
            names.insert(name)
        }
        guard !names.isEmpty, let properties = objects[path]?[interface] else { return [] }
        switch interface {
        case BlueZNames.adapter:
            return [.adapterChanged(AdapterInfo(path: path, properties: properties), changed: names)]
        case BlueZNames.device:
            return DeviceInfo(path: path, properties: properties).map { [.deviceChanged($0, changed: names)] } ?? []
        default:
            return []
        }
    }

    static let gattInterfaces = [BlueZNames.gattService, BlueZNames.gattCharacteristic, BlueZNames.gattDescriptor]

    // MARK: Typed views

    func properties(_ path: String, _ interface: String) -> [String: DBusValue]? {
        objects[path]?[interface]
    }

    var adapters: [AdapterInfo] {
        objects.compactMap { path, interfaces in
            interfaces[BlueZNames.adapter].map { AdapterInfo(path: path, properties: $0) }
        }.sorted { $0.path < $1.path }
    }

    var devices: [DeviceInfo] {
        objects.compactMap { path, interfaces in
            interfaces[BlueZNames.device].flatMap { DeviceInfo(path: path, properties: $0) }
        }.sorted { $0.path < $1.path }
    }

    func device(_ path: String) -> DeviceInfo? {
        properties(path, BlueZNames.device).flatMap { DeviceInfo(path: path, properties: $0) }
    }

    func characteristic(_ path: String) -> GattCharacteristicInfo? {
        properties(path, BlueZNames.gattCharacteristic).flatMap { GattCharacteristicInfo(path: path, properties: $0) }
    }

    func gattTree(device devicePath: String) -> GattTree {
        var services: [GattServiceInfo] = []
        var characteristics: [GattCharacteristicInfo] = []
        var descriptors: [GattDescriptorInfo] = []
        for (path, interfaces) in objects where path.hasPrefix(devicePath + "/") {
            if let properties = interfaces[BlueZNames.gattService], let info = GattServiceInfo(path: path, properties: properties) {
                services.append(info)
            }
            if let properties = interfaces[BlueZNames.gattCharacteristic],
               let info = GattCharacteristicInfo(path: path, properties: properties) {
                characteristics.append(info)
            }
            if let properties = interfaces[BlueZNames.gattDescriptor],
               let info = GattDescriptorInfo(path: path, properties: properties) {
                descriptors.append(info)
            }
        }
        return GattTree(services: services, characteristics: characteristics, descriptors: descriptors)
    }
}
