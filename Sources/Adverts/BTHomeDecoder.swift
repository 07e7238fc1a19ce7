import Bluetooth
import Codecs

/// BTHome v2 (service data 0xFCD2): a device-information byte, the sender's address when flagged, then objects of
/// one id byte each followed by a fixed number of bytes (or a length byte for texts, raw data and commands);
/// optionally encrypted with AES-CCM. Follows bthome-ble's parser object for object, including where it stops: an
/// unknown id or an object running past the end ends the packet, and what came before it stands.
public enum BTHomeDecoder {
    public static let uuid: UInt16 = 0xFCD2

    public static func decode(_ broadcast: Broadcast, bindkey: [UInt8]? = nil) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.serviceData(uuid) else { throw .notRecognised }
        guard let info = data.first else { throw .malformed("empty BTHome service data") }
        let version = info >> 5 & 7
        guard version == 2 else { throw .malformed("BTHome version \(version), not 2") }
        let encrypted = info & 1 != 0
        let addressIncluded = info & 2 != 0
        if bindkey != nil, !encrypted { throw .unencryptedWithBindkey }
        let headerLength = addressIncluded ? 7 : 1
        guard data.count >= headerLength else { throw .malformed("BTHome address flag set but no address") }
        var payload = Array(data[headerLength...])
        var result = AdvertResult(format: .bthome, encrypted: encrypted)
        if encrypted {
            let address: [UInt8]
            if addressIncluded {
                address = ByteReading.reversedAddress(data[1..<7])
            } else if let sender = broadcast.address {
                address = sender.bytes
            } else {
                throw .addressNeeded
            }
            let (plain, counter) = try decrypt(data: data, payload: payload, info: info, address: address,
                                               bindkey: bindkey)
            payload = plain
            result.encryptionCounter = counter
        }
        parseObjects(payload, into: &result)
        guard !result.isEmpty else { throw .malformed("no BTHome object could be read") }
        return result
    }

    /// The payload ends with a 4-byte counter and a 4-byte tag; the nonce is address, UUID (LE), device-info byte
    /// and counter.
    private static func decrypt(data: [UInt8], payload: [UInt8], info: UInt8, address: [UInt8],
                                bindkey: [UInt8]?) throws(AdvertError) -> ([UInt8], UInt32) {
        guard let bindkey else { throw .bindkeyNeeded }
        guard bindkey.count == 16 else { throw .badBindkey }
        guard payload.count >= 10 else { throw .malformed("encrypted BTHome payload too short") }
        let counterBytes = Array(data[(data.count - 8)..<(data.count - 4)])
        let tag = Array(data[(data.count - 4)...])
        let nonce = address + [0xD2, 0xFC, info] + counterBytes
        guard let plain = AESCCM.decrypt(key: bindkey, nonce: nonce, ciphertext: Array(payload.dropLast(8)), tag: tag)
        else { throw .decryptionFailed }
        return (plain, UInt32(ByteReading.unsignedLE(counterBytes)))
    }

    /// Encrypts a plaintext BTHome payload (objects) as a device does: the service data to broadcast. For tests and
    /// the simulated broadcasters of the bench.
    public static func encrypt(objects: [UInt8], address: BluetoothAddress, bindkey: [UInt8], counter: UInt32,
                               info: UInt8 = 0x41) -> [UInt8]? {
        let counterBytes = (0..<4).map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) }
        let nonce = address.bytes + [0xD2, 0xFC, info] + counterBytes
        guard let sealed = AESCCM.encrypt(key: bindkey, nonce: nonce, plaintext: objects, tagLength: 4) else {
            return nil
        }
        let header = info & 2 != 0 ? [info] + address.bytes.reversed() : [info]
        return header + sealed.ciphertext + counterBytes + sealed.tag
    }

    private struct RawObject {
        var id: UInt8
        var kind: BTHomeObjects.Kind
        var bytes: ArraySlice<UInt8>
    }

    static func parseObjects(_ payload: [UInt8], into result: inout AdvertResult) {
        var objects: [RawObject] = []
        var index = 0
        reading: while index < payload.count {
            let id = payload[index]
            guard let kind = BTHomeObjects.kind(id) else { break reading }
            var start = index + 1
            let length: Int
            switch kind {
            case .text, .raw, .command:
                guard index + 2 <= payload.count else { break reading }
                let lengthByte = Int(payload[index + 1])
                length = kind == .command ? 1 + (lengthByte & 0x1F) : lengthByte
                start = index + 2
            case .sensor(_, _, let fixed, _, _), .event(_, let fixed), .deviceInfo(let fixed):
                length = fixed
            case .binary:
                length = 1
            case .timestamp:
                length = 4
            }
            let next = start + length
            if length == 0 {
                index = next
                continue
            }
            guard next <= payload.count else { break reading }
            objects.append(RawObject(id: id, kind: kind, bytes: payload[start..<next]))
            index = next
        }
        // Group numbers, not their descriptions: no String built, hashed or compared per object of every broadcast.
        let groups = objects.map { groupNumbers[Int($0.id)] }
        var numbered: [UInt8] = []
        for (index, object) in objects.enumerated() {
            var postfix = ""
            if let group = groups[index], groups.count(where: { $0 == group }) > 1 {
                numbered.append(group)
                postfix = "_\(numbered.count { $0 == group })"
            }
            apply(object, postfix: postfix, to: &result)
        }
    }

    /// The reference names a second object of the same description `name_1`, `name_2`: objects are grouped by
    /// what they describe (name and unit), so temperature in 0.01 °C and in 0.1 °C count as one kind.
    private static func group(_ kind: BTHomeObjects.Kind) -> String? {
        switch kind {
        case .sensor(let name, let unit, _, _, _): "s:\(name):\(unit ?? "")"
        case .binary(let name): "b:\(name)"
        case .event(let name, _): "e:\(name)"
        case .command: "e:command"
        case .text: "s:text:"
        case .raw: "s:raw:"
        case .timestamp: "s:timestamp:"
        case .deviceInfo: nil
        }
    }

    /// Each object id's group as a number: the lowest id of the same description (`group`), nil for ids without
    /// one (unknown, device information). Built once from the descriptions, so it cannot drift from them.
    private static let groupNumbers: [UInt8?] = {
        let descriptions = (0...255).map { BTHomeObjects.kind(UInt8($0)).flatMap(group) }
        return descriptions.map { description in
            description.flatMap { description in descriptions.firstIndex(of: description).map(UInt8.init) }
        }
    }()

    private static func apply(_ object: RawObject, postfix: String, to result: inout AdvertResult) {
        let bytes = object.bytes
        switch object.kind {
        case .sensor(let name, let unit, _, let signed, let factor):
            let raw = signed ? ByteReading.signedLE(bytes) : Int64(ByteReading.unsignedLE(bytes))
            if object.id == 0x00 {
                result.packetID = UInt32(raw)
                return
            }
            result.set(postfix.isEmpty ? name : name + postfix, DecimalRounding.scaled(raw, factor: factor), unit: unit)
        case .binary(let name):
            let binary = MeasurementNames.binary(name)
            result.set(postfix.isEmpty ? binary : binary + postfix, .state(ByteReading.unsignedLE(bytes) != 0))
        case .text:
            // Not UTF-8: the reference drops the object, so does this.
            if let text = String(validating: bytes, as: UTF8.self) { result.set("text" + postfix, .text(text)) }
        case .raw:
            result.set("raw" + postfix, .text(Hex.encode(Array(bytes))))
        case .timestamp:
            result.set("timestamp" + postfix,
                       .text(Timestamps.iso8601(secondsSince1970: ByteReading.unsignedLE(bytes))))
        case .event(let name, _):
            let code = bytes[bytes.startIndex]
            if name == "dimmer" {
                guard let type = BTHomeObjects.dimmerEvents[code] else { return }
                let steps = Int(ByteReading.unsignedLE(bytes.dropFirst()))
                result.events.append(AdvertEvent(name: name + postfix, type: type, steps: steps))
            } else if let type = BTHomeObjects.buttonEvents[code] {
                result.events.append(AdvertEvent(name: name + postfix, type: type))
            }
        case .command:
            guard let type = BTHomeObjects.commandEvents[bytes[bytes.startIndex]] else { return }
            result.events.append(AdvertEvent(name: "command" + postfix, type: type,
                                             arguments: Hex.encode(Array(bytes.dropFirst()))))
        case .deviceInfo:
            return
        }
    }
}
