import BlueZ
import Bluetooth
import Codecs

/// A device's GATT tree with the values read from it, rendered as text or JSON.
public struct GattReport: Sendable {
    public struct Characteristic: Sendable {
        public var info: GattCharacteristicInfo
        public var descriptors: [GattDescriptorInfo]
        public var value: [UInt8]?
        public var error: String?
    }

    public struct Service: Sendable {
        public var info: GattServiceInfo
        public var characteristics: [Characteristic]
    }

    public var address: BluetoothAddress
    public var name: String?
    public var services: [Service]
    /// BlueZ's `Paired`/`Bonded`/`Trusted` of the device (docs/pairing.md).
    public var paired = false
    public var bonded = false
    public var trusted = false

    /// Reads every readable characteristic of a connected, resolved device; a failed read is kept as an error, not
    /// fatal. `describe` words a BlueZ error (the CLI names the D-Bus error too).
    public static func read(info: DeviceInfo, tree: GattTree, client: BlueZClient,
                            describe: (BlueZError) -> String = { $0.description }) async -> GattReport {
        var services: [Service] = []
        for service in tree.services {
            var characteristics: [Characteristic] = []
            for characteristic in service.characteristics {
                var entry = Characteristic(info: characteristic.info, descriptors: characteristic.descriptors)
                if characteristic.info.canRead {
                    do {
                        entry.value = try await client.readValue(characteristic: characteristic.info.path)
                    } catch {
                        entry.error = describe(error)
                    }
                }
                characteristics.append(entry)
            }
            services.append(Service(info: service.info, characteristics: characteristics))
        }
        var report = GattReport(address: info.address, name: info.name, services: services)
        (report.paired, report.bonded, report.trusted) = (info.paired, info.bonded, info.trusted)
        return report
    }

    /// The `inspect --json` object, also the `data` of the bridge API's `inspect` (docs/cli.md, §7).
    public var json: JSONValue {
        .object([
            ("address", .string(address.description)),
            ("name", name.map(JSONValue.string) ?? .null),
            ("paired", .bool(paired)),
            ("bonded", .bool(bonded)),
            ("trusted", .bool(trusted)),
            ("services", .array(services.map { service in
                .object([
                    ("uuid", .string(service.info.uuid.uuidString)),
                    ("name", service.info.uuid.sigName.map(JSONValue.string) ?? .null),
                    ("primary", .bool(service.info.primary)),
                    ("characteristics", .array(service.characteristics.map(Self.json))),
                ])
            })),
        ])
    }

    private static func json(_ characteristic: Characteristic) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("uuid", .string(characteristic.info.uuid.uuidString)),
            ("name", characteristic.info.uuid.sigName.map(JSONValue.string) ?? .null),
            ("properties", .array(characteristic.info.flags.map(JSONValue.string))),
            ("value", characteristic.value.map { ValuePresentation.decoded($0, uuid: characteristic.info.uuid) } ?? .null),
            ("value_hex", characteristic.value.map { .string(ValuePresentation.hex($0)) } ?? .null),
        ]
        if let error = characteristic.error { members.append(("error", .string(error))) }
        members.append(("descriptors", .array(characteristic.descriptors.map { descriptor in
            .object([
                ("uuid", .string(descriptor.uuid.uuidString)),
                ("name", descriptor.uuid.sigName.map(JSONValue.string) ?? .null),
            ])
        })))
        return .object(members)
    }
}
