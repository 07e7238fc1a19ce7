/// The Govee thermometer-hygrometers (H5072, H5074, H5075, H5100–H5110, H5174, H5177, H5179, GV5179, H5051, H5052,
/// H5071, H5106): temperature, humidity and battery in manufacturer data. Govee reuses lengths and company ids across
/// models, so, as in govee-ble, the model comes from the length, the company id and the local name together, tried
/// in govee-ble's order; the other Govee devices (buttons, probes, meat thermometers, presence sensors) are not read.
public enum GoveeDecoder {
    /// Apple's company id: iBeacons from Govee devices are not theirs.
    static let apple: UInt16 = 0x004C

    public static func decode(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        for entry in broadcast.manufacturerData where entry.company != apple {
            if let result = decode(entry.bytes, company: entry.company, name: broadcast.name ?? "") { return result }
        }
        throw .notRecognised
    }

    static func decode(_ bytes: [UInt8], company: UInt16, name: String) -> AdvertResult? {
        var data = bytes
        if data.count > 25, contains(data, "INTELLI_ROCKS") { data.removeLast(25) }
        let has = { (model: String) in name.contains(model) }
        switch data.count {
        case 6:
            let h5127 = (data.starts(with: [0xEC, 0x00, 0x01, 0x01]) || data.starts(with: [0xEC, 0x00, 0x02, 0x01]))
                && (has("H5127") || company == 0x8803 || company == 0x8843)
            if h5127 { return nil }
            if has("H5072") || has("H5075") || has("H5129") || company == 0xEC88 {
                return packed(data[1..<5])
            }
            if hygrometer100(has) { return packed(data[2..<6]) }
            if has("H5106") { return h5106(data) }
            return nil
        case 7:
            return has("H5074") || company == 0xEC88 ? littleEndian(data[1..<6]) : nil
        case 8:
            if has("GV5112") || has("H5112") || has("5140") { return nil }
            return hygrometer100(has) || company == 0x0001 ? packed(data[2..<6]) : nil
        case 9:
            if company == 0xEC88 || has("H5051") || has("H5052") || has("H5071") { return littleEndian(data[1..<6]) }
            if has("H5178") || has("B5178") || company == 0x0001 { return nil }
            if has("H5179") || company == 0x8801 { return littleEndian(data[4..<9]) }
            return nil
        default:
            return nil
        }
    }

    private static func hygrometer100(_ has: (String) -> Bool) -> Bool {
        ["H5108", "H5100", "H5101", "H5102", "H5103", "H5104", "H5105", "H5174", "H5177", "H5110", "GV5179"]
            .contains(where: has)
    }

    /// Three bytes: sign bit, then temperature × 10000 + humidity × 10 packed in one number; a battery byte whose top
    /// bit flags a sensor error. A reading out of −40…100 °C or flagged is an error: only the battery is kept.
    private static func packed(_ bytes: ArraySlice<UInt8>) -> AdvertResult {
        let b = Array(bytes)
        let base = Int(b[0]) << 16 | Int(b[1]) << 8 | Int(b[2])
        let magnitude = base & 0x7FFFFF
        var temperature = Double(magnitude / 1000) / 10
        if base & 0x800000 != 0 { temperature = -temperature }
        let humidity = Double(magnitude % 1000) / 10
        let battery = b[3] & 0x7F
        let failed = b[3] & 0x80 != 0
        var result = AdvertResult(format: .govee)
        if !failed, temperature >= -40, temperature <= 100 {
            result.set("temperature", .number(round2(temperature)), unit: "°C")
            result.set("humidity", .number(round2(humidity)), unit: "%")
        }
        result.set("battery", .integer(Int64(battery)), unit: "%")
        return result
    }

    /// int16 temperature and uint16 humidity in hundredths, then a battery byte, little-endian.
    private static func littleEndian(_ bytes: ArraySlice<UInt8>) -> AdvertResult {
        let b = Array(bytes)
        var result = AdvertResult(format: .govee)
        result.set("temperature", .number(round2(Double(ByteReading.signedLE(b[0..<2])) / 100)), unit: "°C")
        result.set("humidity", .number(round2(Double(ByteReading.unsignedLE(b[2..<4])) / 100)), unit: "%")
        result.set("battery", .integer(Int64(b[4])), unit: "%")
        return result
    }

    /// H5106 (with PM2.5): temperature, humidity and PM2.5 packed in decimal digits of a 4-byte number.
    private static func h5106(_ data: [UInt8]) -> AdvertResult {
        let raw = ByteReading.unsignedBE(data[2..<6])
        let magnitude = raw & 0x7FFF_FFFF
        var temperature = Double(magnitude / 1_000_000) / 10
        if raw & 0x8000_0000 != 0 { temperature = -temperature }
        var result = AdvertResult(format: .govee)
        result.set("temperature", .number(round2(temperature)), unit: "°C")
        result.set("humidity", .number(round2(Double(magnitude % 1_000_000 / 1000) / 10)), unit: "%")
        result.set("pm25", .integer(Int64(magnitude % 1000)), unit: "µg/m³")
        return result
    }

    /// govee-ble rounds every reading to two places.
    private static func round2(_ value: Double) -> Double { DecimalRounding.round(value, places: 2) }

    private static func contains(_ data: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard data.count >= needle.count else { return false }
        return (0...(data.count - needle.count)).contains { data[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
