import Bluetooth
import Codecs

/// How `inspect` shows a characteristic value without being told a codec: by what the UUID is known to hold.
public enum ValuePresentation {
    /// SIG characteristics that hold UTF-8 strings: Device Name, Model/Serial/Firmware/Hardware/Software revision,
    /// Manufacturer Name.
    public static let textCharacteristics: Set<UInt16> = [0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29]

    public static func defaultCodec(for uuid: BluetoothUUID) -> CodecKind {
        switch uuid.uint16 {
        case 0x2A19: .batteryLevel
        case 0x2A37: .heartRateMeasurement
        case let short? where textCharacteristics.contains(short): .text
        default: .hex
        }
    }

    /// The value for people (`inspect` text output): text quoted, numbers and JSON as the codec prints them,
    /// anything undecodable as hex.
    public static func display(_ bytes: [UInt8], uuid: BluetoothUUID) -> String {
        switch decoded(bytes, uuid: uuid) {
        case .string(let text) where defaultCodec(for: uuid) == .text: quoted(text)
        case .string(let text): text
        case let other: other.serialized
        }
    }

    /// The value as JSON (`inspect --json`): a string for text and hex, a number for battery level, an object
    /// for a heart-rate measurement; hex when the default codec rejects the bytes.
    public static func decoded(_ bytes: [UInt8], uuid: BluetoothUUID) -> JSONValue {
        let hex = Self.hex(bytes)
        guard let codec = try? Codec(defaultCodec(for: uuid)) else { return .string(hex) }
        switch codec.kind {
        case .text:
            guard let text = printableText(bytes) else { return .string(hex) }
            return .string(text)
        case .batteryLevel:
            guard let text = try? codec.decode(bytes), let level = Int(text) else { return .string(hex) }
            return .int(level)
        case .heartRateMeasurement:
            guard let text = try? codec.decode(bytes), let json = try? JSONValue.parse(text) else { return .string(hex) }
            return json
        default:
            return .string(hex)
        }
    }

    /// The text when the bytes are valid UTF-8 without control characters (a trailing NUL, common in device
    /// strings, is dropped).
    public static func printableText(_ bytes: [UInt8]) -> String? {
        var bytes = bytes[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        guard text.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control }) else { return nil }
        return text
    }

    /// Lowercase hex without separators, the `hex` codec's format.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return out
    }

    public static func quoted(_ text: String) -> String {
        JSONValue.string(text).serialized
    }
}
