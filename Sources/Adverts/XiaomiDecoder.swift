import Bluetooth

/// Xiaomi MiBeacon (service data 0xFE95), versions 2–5: a frame control word, product id, frame counter, optional
/// sender address and capability bytes, then objects of a 2-byte id and a length byte; v4/v5 may encrypt the objects
/// with AES-CCM under the device's bindkey. Follows xiaomi-ble's parser.
public enum XiaomiDecoder {
    public static let uuid: UInt16 = 0xFE95

    public static func decode(_ broadcast: Broadcast, bindkey: [UInt8]? = nil) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.serviceData(uuid) else { throw .notRecognised }
        guard data.count >= 5 else { throw .malformed("MiBeacon shorter than 5 bytes") }
        let control = UInt16(data[0]) | UInt16(data[1]) << 8
        let version = Int(control >> 12)
        guard control >> 7 & 1 == 0 else { throw .unsupported("MiBeacon mesh frames") }
        guard version >= 2 else { throw .unsupported("MiBeacon version \(version)") }
        var index = 5
        let address: [UInt8]?
        if control >> 4 & 1 != 0 {
            index += 6
            guard data.count >= index else { throw .malformed("MiBeacon address flag set but no address") }
            let carried = ByteReading.reversedAddress(data[5..<11])
            // The reference drops a frame whose address is not its sender's.
            if let sender = broadcast.address, sender.bytes != carried {
                throw .malformed("MiBeacon address differs from the sender's")
            }
            address = carried
        } else {
            address = broadcast.address?.bytes
        }
        let product = UInt16(data[2]) | UInt16(data[3]) << 8
        guard let model = XiaomiDevices.models[product] else {
            throw .unsupported("MiBeacon product id 0x\(String(product, radix: 16))")
        }
        if control >> 5 & 1 != 0 {
            index += 1
            guard data.count >= index else { throw .malformed("MiBeacon capability byte missing") }
            if data[index - 1] & 0x20 != 0 {
                index += 1
                guard data.count >= index else { throw .malformed("MiBeacon capability I/O byte missing") }
            }
        }
        guard control >> 6 & 1 != 0 else { throw .malformed("MiBeacon frame without objects") }
        var result = AdvertResult(format: .xiaomi, packetID: UInt32(data[4]))
        let payload: [UInt8]
        if control >> 3 & 1 != 0 {
            result.encrypted = true
            guard version >= 4 else { throw .unsupported("MiBeacon v\(version) (legacy) encryption") }
            guard let address else { throw .addressNeeded }
            let (plain, counter) = try decrypt(data, from: index, address: address, bindkey: bindkey)
            payload = plain
            result.encryptionCounter = counter
        } else {
            // Unlike BTHome, a plaintext frame from a device with a bindkey is read: xiaomi-ble does, and some
            // models send their plaintext frames beside encrypted ones.
            guard data.count >= index + 3 else { throw .malformed("MiBeacon object missing") }
            payload = Array(data[index...])
        }
        var start = 0
        while payload.count >= start + 3 {
            let id = UInt16(payload[start]) | UInt16(payload[start + 1]) << 8
            let next = start + 3 + Int(payload[start + 2])
            guard next <= payload.count else { break }
            XiaomiObjects.apply(id, payload[(start + 3)..<next], model: model, to: &result)
            start = next
        }
        guard !result.measurements.isEmpty || !result.events.isEmpty else {
            throw .malformed("no MiBeacon object could be read")
        }
        return result
    }

    /// v4/v5: objects, a 3-byte extension of the frame counter, a 4-byte tag. Nonce: the address (as sent),
    /// product id, frame counter and counter extension; associated data 0x11.
    private static func decrypt(_ data: [UInt8], from index: Int, address: [UInt8],
                                bindkey: [UInt8]?) throws(AdvertError) -> ([UInt8], UInt32) {
        guard data.count >= index + 9 else { throw .malformed("encrypted MiBeacon too short") }
        guard let bindkey else { throw .bindkeyNeeded }
        guard bindkey.count == 16 else { throw .badBindkey }
        let n = data.count
        let nonce = Array(address.reversed()) + Array(data[2..<5]) + Array(data[(n - 7)..<(n - 4)])
        guard let plain = AESCCM.decrypt(key: bindkey, nonce: nonce, ciphertext: Array(data[index..<(n - 7)]),
                                         tag: Array(data[(n - 4)...]), associatedData: [0x11])
        else { throw .decryptionFailed }
        // The full counter: frame counter (low byte) and its 3-byte extension.
        let counter = UInt32(data[4]) | UInt32(ByteReading.unsignedLE(data[(n - 7)..<(n - 4)])) << 8
        return (plain, counter)
    }

    /// Encrypts MiBeacon objects as a v5 device does (address included), for tests and simulated broadcasters.
    public static func encrypt(objects: [UInt8], address: BluetoothAddress, product: UInt16, frameCounter: UInt8,
                               counterExtension: [UInt8] = [0, 0, 0], bindkey: [UInt8]) -> [UInt8]? {
        // Frame control 0x5858: v5, objects included, address included, encrypted.
        let header: [UInt8] = [0x58, 0x58, UInt8(product & 0xFF), UInt8(product >> 8), frameCounter]
        let sender = Array(address.bytes.reversed())
        let nonce = sender + Array(header[2..<5]) + counterExtension
        guard counterExtension.count == 3,
              let sealed = AESCCM.encrypt(key: bindkey, nonce: nonce, plaintext: objects, tagLength: 4,
                                          associatedData: [0x11])
        else { return nil }
        return header + sender + sealed.ciphertext + counterExtension + sealed.tag
    }
}
