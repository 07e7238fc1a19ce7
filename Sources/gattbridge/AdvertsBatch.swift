import Adverts
import Bluetooth
import Codecs
import Glibc

/// `adverts decode --batch`: JSON lines in, JSON lines out, for the differential tests. Each input line is
/// `{"address":…,"name":…,"bindkey":HEX,"format":…,"service_data":{UUID:HEX},"manufacturer_data":{ID:HEX}}` (all
/// optional); each answer is the decode output with `"units"`, or `{"error":…}`. A bindkey given to the command
/// applies to lines without one.
enum AdvertsBatch {
    static func run(bindkey: Bindkey?) {
        while let line = readLine(strippingNewline: true) {
            guard !line.isEmpty else { continue }
            Terminal.out(answer(line, bindkey: bindkey).serialized + "\n")
        }
    }

    static func answer(_ line: String, bindkey: Bindkey?) -> JSONValue {
        let request: JSONValue
        do throws(CodecError) {
            request = try JSONValue.parse(line)
        } catch {
            return ["error": .string("bad request: \(error)")]
        }
        var broadcast = Broadcast()
        // Not every platform has addresses (macOS reports UUIDs, and the references' tests use some): an address that
        // is not one is as good as none.
        broadcast.address = request["address"]?.stringValue.flatMap(BluetoothAddress.init)
        broadcast.name = request["name"]?.stringValue
        for (key, value) in request["service_data"]?.objectValue ?? [] {
            guard let uuid = BluetoothUUID(key), let bytes = try? Hex.decode(value.stringValue ?? "") else {
                return ["error": "bad service_data"]
            }
            broadcast.serviceData.append(.init(uuid: uuid, bytes: bytes))
        }
        for (key, value) in request["manufacturer_data"]?.objectValue ?? [] {
            guard let company = AdvertsArguments.companyID(key), let bytes = try? Hex.decode(value.stringValue ?? "")
            else { return ["error": "bad manufacturer_data"] }
            broadcast.manufacturerData.append(.init(company: company, bytes: bytes))
        }
        var key = bindkey
        if let text = request["bindkey"]?.stringValue {
            guard let given = Bindkey(hex: text) else { return ["error": "bad bindkey"] }
            key = given
        }
        var formats = Set(AdvertFormat.allCases)
        if let name = request["format"]?.stringValue {
            guard let format = AdvertFormat(rawValue: name) else { return ["error": "bad format"] }
            formats = [format]
        }
        do throws(AdvertError) {
            return try AdvertDecoder.decode(broadcast, formats: formats, bindkey: key?.bytes).json(units: true)
        } catch {
            return ["error": .string(error.description)]
        }
    }
}
