import Bluetooth
import Codecs

/// iBeacon (Apple manufacturer data, type 0x02 0x15) and Eddystone (service data 0xFEAA: UID, URL and TLM frames):
/// presence beacons. Their identity is reported (`.identity` values, not readings) and, for Eddystone TLM, the
/// battery voltage and temperature it carries. A TLM frame from a beacon without those sensors (both "not supported")
/// decodes to an empty result, not an error: it is still the beacon being heard, which is what presence is.
public enum BeaconDecoder {
    public static let apple: UInt16 = 0x004C
    public static let eddystoneUUID: UInt16 = 0xFEAA

    public static func decodeIBeacon(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.manufacturerData(apple), data.count >= 2, data[0] == 0x02, data[1] == 0x15
        else { throw .notRecognised }
        guard data.count == 23 else { throw .malformed("iBeacon of \(data.count) bytes, not 23") }
        let uuid = BluetoothUUID(high: ByteReading.unsignedBE(data[2..<10]), low: ByteReading.unsignedBE(data[10..<18]))
        var result = AdvertResult(format: .ibeacon)
        result.set("uuid", .identity(uuid.uuidString))
        result.set("major", .identity(String(ByteReading.unsignedBE(data[18..<20]))))
        result.set("minor", .identity(String(ByteReading.unsignedBE(data[20..<22]))))
        result.set("tx_power", .integer(Int64(Int8(bitPattern: data[22]))), unit: "dBm")
        return result
    }

    public static func decodeEddystone(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.serviceData(eddystoneUUID) else { throw .notRecognised }
        guard let frame = data.first else { throw .malformed("empty Eddystone frame") }
        var result = AdvertResult(format: .eddystone)
        switch frame {
        case 0x00:
            guard data.count >= 18 else { throw .malformed("Eddystone UID frame of \(data.count) bytes") }
            result.set("namespace", .identity(Hex.encode(Array(data[2..<12]))))
            result.set("instance", .identity(Hex.encode(Array(data[12..<18]))))
            result.set("tx_power", .integer(Int64(Int8(bitPattern: data[1]))), unit: "dBm")
        case 0x10:
            guard data.count >= 3, let url = url(data[2...]) else { throw .malformed("Eddystone URL frame") }
            result.set("url", .identity(url))
            result.set("tx_power", .integer(Int64(Int8(bitPattern: data[1]))), unit: "dBm")
        case 0x20:
            guard data.count >= 14, data[1] == 0 else { throw .malformed("Eddystone TLM frame") }
            let millivolts = ByteReading.unsignedBE(data[2..<4])
            if millivolts != 0 { result.set("voltage", .integer(Int64(millivolts)), unit: "mV") }
            // 8.8 fixed point; 0x8000 means "not supported".
            let temperature = ByteReading.signedBE(data[4..<6])
            if temperature != -32768 {
                result.set("temperature", .number(DecimalRounding.round(Double(temperature) / 256, places: 2)),
                           unit: "°C")
            }
        default:
            throw .unsupported("Eddystone frame type 0x\(String(frame, radix: 16))")
        }
        return result
    }

    private static let schemes = ["http://www.", "https://www.", "http://", "https://"]
    private static let expansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                     ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]

    /// The URL frame's compressed spelling: a scheme code, then printable ASCII with codes for common endings.
    private static func url(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let first = bytes.first, Int(first) < schemes.count else { return nil }
        var text = schemes[Int(first)]
        for byte in bytes.dropFirst() {
            if Int(byte) < expansions.count {
                text += expansions[Int(byte)]
            } else if (0x21...0x7E).contains(byte) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                return nil
            }
        }
        return text
    }
}
