import Bluetooth

/// A device's GATT database as BlueZ exported it, ordered by object path (which follows handle order).
public struct GattTree: Sendable, Equatable {
    public struct Service: Sendable, Equatable {
        public var info: GattServiceInfo
        public var characteristics: [Characteristic]
    }

    public struct Characteristic: Sendable, Equatable {
        public var info: GattCharacteristicInfo
        public var descriptors: [GattDescriptorInfo]
    }

    public var services: [Service]

    public init(services: [Service]) {
        self.services = services
    }

    /// Builds the tree from flat lists; objects whose parent is missing are dropped.
    public init(services: [GattServiceInfo], characteristics: [GattCharacteristicInfo], descriptors: [GattDescriptorInfo]) {
        let descriptorsByCharacteristic = Dictionary(grouping: descriptors, by: \.characteristicPath)
        let characteristicsByService = Dictionary(grouping: characteristics, by: \.servicePath)
        self.services = services.sorted { $0.path < $1.path }.map { service in
            Service(info: service, characteristics: (characteristicsByService[service.path] ?? [])
                .sorted { $0.path < $1.path }
                .map { characteristic in
                    Characteristic(info: characteristic,
                                   descriptors: (descriptorsByCharacteristic[characteristic.path] ?? []).sorted { $0.path < $1.path })
                })
        }
    }

    public var isEmpty: Bool { services.isEmpty }

    /// The first characteristic with this UUID (in handle order), optionally only within a service with `service` UUID.
    public func characteristic(_ uuid: BluetoothUUID, service: BluetoothUUID? = nil) -> GattCharacteristicInfo? {
        for candidate in services where service == nil || candidate.info.uuid == service {
            if let match = candidate.characteristics.first(where: { $0.info.uuid == uuid }) {
                return match.info
            }
        }
        return nil
    }
}
