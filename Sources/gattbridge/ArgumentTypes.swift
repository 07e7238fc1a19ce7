import ArgumentParser
import Bluetooth
import Codecs
import Logging

/// ADDRESS: parsed by ArgumentParser so a malformed one is a usage error (exit 64) before anything connects.
struct AddressArgument: Sendable, CustomStringConvertible {
    var address: BluetoothAddress

    /// For `@Argument(transform:)`, so the usage error says what is expected.
    static func parse(_ text: String) throws -> AddressArgument {
        guard let address = BluetoothAddress(text) else {
            throw ValidationError("not a Bluetooth address (expected AA:BB:CC:DD:EE:FF)")
        }
        return AddressArgument(address: address)
    }

    var description: String { address.description }
}

/// CHAR: `2a37`, a 128-bit UUID, or `SERVICE/CHAR`.
struct CharacteristicArgument: Sendable, CustomStringConvertible {
    var service: BluetoothUUID?
    var characteristic: BluetoothUUID

    static func parse(_ text: String) throws -> CharacteristicArgument {
        guard let parsed = CharacteristicArgument(argument: text) else {
            throw ValidationError("not a characteristic UUID (expected e.g. 2a37, a 128-bit UUID, or SERVICE/CHAR)")
        }
        return parsed
    }

    init?(argument: String) {
        let parts = argument.split(separator: "/", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            guard let uuid = BluetoothUUID(String(parts[0])) else { return nil }
            service = nil
            characteristic = uuid
        case 2:
            guard let service = BluetoothUUID(String(parts[0])), let uuid = BluetoothUUID(String(parts[1])) else { return nil }
            self.service = service
            characteristic = uuid
        default:
            return nil
        }
    }

    var description: String {
        service.map { "\($0)/\(characteristic)" } ?? characteristic.description
    }
}

extension CodecKind: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
