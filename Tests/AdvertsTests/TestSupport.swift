@testable import Adverts
import Bluetooth
import Codecs

func hexString(_ data: [UInt8]) -> String { Hex.encode(data) }

/// Bytes from hex digits (test vectors are written as the reference parsers' tests write them).
func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
}

func serviceData(_ uuid: UInt16, _ hex: String, address: String? = nil, name: String? = nil) -> Broadcast {
    Broadcast(address: address.flatMap(BluetoothAddress.init), name: name,
              serviceData: [.init(uuid: BluetoothUUID(uuid), bytes: bytes(hex))])
}

func manufacturerData(_ company: UInt16, _ hex: String, name: String? = nil) -> Broadcast {
    Broadcast(name: name, manufacturerData: [.init(company: company, bytes: bytes(hex))])
}

/// The readings as name → value, for compact expectations.
func values(_ result: AdvertResult) -> [String: MeasurementValue] {
    Dictionary(uniqueKeysWithValues: result.measurements.map { ($0.name, $0.value) })
}

func units(_ result: AdvertResult) -> [String: String] {
    Dictionary(uniqueKeysWithValues: result.measurements.compactMap { m in m.unit.map { (m.name, $0) } })
}

/// Every prefix of a valid packet decodes to something or fails with an error: never a crash.
func decodePrefixes(_ broadcast: Broadcast, bindkey: [UInt8]? = nil) -> Int {
    var decoded = 0
    for data in broadcast.serviceData {
        for length in 0..<data.bytes.count {
            var copy = broadcast
            copy.serviceData = [.init(uuid: data.uuid, bytes: Array(data.bytes.prefix(length)))]
            if (try? AdvertDecoder.decode(copy, bindkey: bindkey)) != nil { decoded += 1 }
        }
    }
    for data in broadcast.manufacturerData {
        for length in 0..<data.bytes.count {
            var copy = broadcast
            copy.manufacturerData = [.init(company: data.company, bytes: Array(data.bytes.prefix(length)))]
            if (try? AdvertDecoder.decode(copy, bindkey: bindkey)) != nil { decoded += 1 }
        }
    }
    return decoded
}
