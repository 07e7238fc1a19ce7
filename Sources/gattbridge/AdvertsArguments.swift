import Adverts
import ArgumentParser
import Bluetooth
import Codecs

/// The `adverts decode` arguments that need parsing: `UUID=HEX`, `ID=HEX`, a format name.
enum AdvertsArguments {
    static func format(_ text: String) throws -> AdvertFormat {
        guard let format = AdvertFormat(rawValue: text) else {
            let names = AdvertFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("unknown format (expected one of \(names))")
        }
        return format
    }

    static func serviceData(_ text: String) throws -> Broadcast.ServiceData {
        let (key, bytes) = try split(text, what: "UUID")
        guard let uuid = BluetoothUUID(key) else { throw ValidationError("\(key) is not a UUID (fcd2 or 128-bit)") }
        return Broadcast.ServiceData(uuid: uuid, bytes: bytes)
    }

    static func manufacturerData(_ text: String) throws -> Broadcast.ManufacturerData {
        let (key, bytes) = try split(text, what: "ID")
        guard let company = companyID(key) else {
            throw ValidationError("\(key) is not a company id (0x0499 or 1177)")
        }
        return Broadcast.ManufacturerData(company: company, bytes: bytes)
    }

    /// `0x0499` (hex with the prefix) or `1177` (decimal).
    static func companyID(_ text: String) -> UInt16? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") { return UInt16(text.dropFirst(2), radix: 16) }
        return UInt16(text)
    }

    private static func split(_ text: String, what: String) throws -> (String, [UInt8]) {
        guard let equals = text.firstIndex(of: "=") else { throw ValidationError("expected \(what)=HEX") }
        let key = String(text[..<equals])
        do throws(CodecError) {
            return (key, try Hex.decode(String(text[text.index(after: equals)...])))
        } catch {
            throw ValidationError("\(error)")
        }
    }
}
