import BlueZ
import Codecs
import Config

/// Turns an MQTT `set` payload into what is written to the characteristic, and writes it.
package enum CommandEncoding {
    package struct Rejection: Error, CustomStringConvertible {
        package let description: String
    }

    /// Bytes to write. Text gets its write delimiter here; it is chunked at write time, when the MTU is known.
    package static func encode(_ payload: [UInt8], for channel: ChannelConfig) throws(Rejection) -> [UInt8] {
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw Rejection(description: "payload for \(channel.name) is not valid UTF-8")
        }
        if channel.codecKind == .text {
            return Array(channel.codec.mapCommand(text).utf8) + Array(channel.writeDelimiter.utf8)
        }
        do {
            return try channel.codec.encode(text)
        } catch {
            throw Rejection(description: "bad payload for \(channel.name) (codec \(channel.codecKind.rawValue)): \(error.message)")
        }
    }

    /// With response when configured, else when the characteristic allows it, else without.
    package static func writeType(_ channel: ChannelConfig, _ info: GattCharacteristicInfo) -> GattWriteType {
        if let withResponse = channel.writeWithResponse { return withResponse ? .request : .command }
        return info.canWrite ? .request : .command
    }

    /// What one command writes, in order: text in chunks of MTU − 3 bytes (20 when the MTU is unknown), cut between
    /// characters (a receiver may decode each write on its own); other codecs in one write.
    package static func chunks(_ bytes: [UInt8], channel: ChannelConfig, mtu: Int?) -> [[UInt8]] {
        guard channel.codecKind == .text else { return [bytes] }
        // `encode` validated the UTF-8 and appended the delimiter, so decoding gives back exactly these bytes.
        return textChunks(String(decoding: bytes, as: UTF8.self), delimiter: "", mtu: mtu)
    }
}
