import ArgumentParser
import BlueZ
import Bluetooth
import Codecs
import Logging

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Connect to a device and print its GATT tree with the value of every readable characteristic."
    )

    @OptionGroup var bluetooth: BluetoothOptions
    @OptionGroup var device: DeviceOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        bluetooth.bootstrapLogging()
        let logger = Logger(label: "gattbridge.inspect")
        let address = self.address.address
        let timeout = device.duration
        let json = self.json
        let session = try await BlueZSession.open(bluetooth, logger: logger)
        do throws(CLIFailure) {
            let report = try await Interruption.run { () async throws(CLIFailure) -> GattReport in
                let connected = try await session.connect(address, timeout: timeout)
                let report = await GattReport.read(connected, client: session.client)
                await session.release(connected)
                return report
            }.value
            await session.close()
            Terminal.out(json ? report.json.serialized + "\n" : report.text)
        } catch {
            await session.close()
            throw error
        }
    }
}

/// A device's GATT tree with the values read from it, rendered as text or JSON.
struct GattReport: Sendable {
    struct Characteristic: Sendable {
        var info: GattCharacteristicInfo
        var descriptors: [GattDescriptorInfo]
        var value: [UInt8]?
        var error: String?
    }

    struct Service: Sendable {
        var info: GattServiceInfo
        var characteristics: [Characteristic]
    }

    var address: BluetoothAddress
    var name: String?
    var services: [Service]

    /// Reads every readable characteristic; a failed read is kept as an error line, not fatal.
    static func read(_ device: BlueZSession.ConnectedDevice, client: BlueZClient) async -> GattReport {
        var services: [Service] = []
        for service in device.tree.services {
            var characteristics: [Characteristic] = []
            for characteristic in service.characteristics {
                var entry = Characteristic(info: characteristic.info, descriptors: characteristic.descriptors)
                if characteristic.info.canRead {
                    do {
                        entry.value = try await client.readValue(characteristic: characteristic.info.path)
                    } catch {
                        entry.error = ExitStatus.describe(error)
                    }
                }
                characteristics.append(entry)
            }
            services.append(Service(info: service.info, characteristics: characteristics))
        }
        return GattReport(address: device.info.address, name: device.info.name, services: services)
    }

    var text: String {
        var lines = [name.map { "\(address) \(ValuePresentation.quoted($0))" } ?? address.description]
        for service in services {
            lines.append("  service \(UUIDNames.labelled(service.info.uuid))\(service.info.primary ? "" : " (secondary)")")
            for characteristic in service.characteristics {
                var line = "    characteristic \(UUIDNames.labelled(characteristic.info.uuid))"
                line += "  [\(characteristic.info.flags.joined(separator: ", "))]"
                if let value = characteristic.value {
                    line += "  = \(ValuePresentation.display(value, uuid: characteristic.info.uuid))"
                } else if let error = characteristic.error {
                    line += "  ! read failed: \(error)"
                }
                lines.append(line)
                for descriptor in characteristic.descriptors {
                    lines.append("      descriptor \(UUIDNames.labelled(descriptor.uuid))")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    var json: JSONValue {
        .object([
            ("address", .string(address.description)),
            ("name", name.map(JSONValue.string) ?? .null),
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
