import ArgumentParser
import BlueZ
import Bluetooth
import BridgeTools
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
                let report = await GattReport.read(info: connected.info, tree: connected.tree, client: session.client,
                                                   describe: ExitStatus.describe)
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

extension GattReport {
    /// The tree for people (`inspect` without `--json`).
    var text: String {
        var lines = [name.map { "\(address) \(ValuePresentation.quoted($0))" } ?? address.description]
        lines.append("  paired: \(paired ? "yes" : "no"), bonded: \(bonded ? "yes" : "no"), trusted: \(trusted ? "yes" : "no")")
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
}
