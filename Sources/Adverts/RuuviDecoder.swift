/// RuuviTag data format 5 ("RAWv2", manufacturer data 0x0499): 24 bytes, big-endian. Read as ruuvitag-ble reads it:
/// fields holding their "not available" value are left out, acceleration in m/s² rounded to 0.01.
public enum RuuviDecoder {
    public static let company: UInt16 = 0x0499

    public static func decode(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.manufacturerData(company) else { throw .notRecognised }
        guard let format = data.first else { throw .malformed("empty Ruuvi manufacturer data") }
        guard format == 5 else { throw .unsupported("Ruuvi data format \(format)") }
        guard data.count == 24 else { throw .malformed("Ruuvi format 5 of \(data.count) bytes, not 24") }
        func signed(_ at: Int) -> Int64 { ByteReading.signedBE(data[at..<(at + 2)]) }
        func unsigned(_ at: Int) -> UInt64 { ByteReading.unsignedBE(data[at..<(at + 2)]) }
        var result = AdvertResult(format: .ruuvi, packetID: UInt32(unsigned(16)))
        if signed(1) != -32768 {
            result.set("temperature", .number(DecimalRounding.round(Double(signed(1)) / 200, places: 2)), unit: "°C")
        }
        if unsigned(3) != 0xFFFF {
            result.set("humidity", .number(DecimalRounding.round(Double(unsigned(3)) / 400, places: 2)), unit: "%")
        }
        if unsigned(5) != 0xFFFF {
            let hPa = DecimalRounding.round(Double(unsigned(5) + 50000) / 100, places: 2)
            result.set("pressure", .number(hPa), unit: "hPa")
        }
        let power = unsigned(13)
        if power >> 5 != 0b111_1111_1111 {
            result.set("voltage", .integer(Int64(power >> 5) + 1600), unit: "mV")
        }
        result.set("movement_counter", .integer(Int64(data[15])))
        let axes = [signed(7), signed(9), signed(11)]
        if !axes.contains(-32768) {
            let metres = axes.map { DecimalRounding.round(Double($0) * 0.00980665, places: 2) }
            for (name, value) in zip(["acceleration_x", "acceleration_y", "acceleration_z"], metres) {
                result.set(name, .number(value), unit: "m/s²")
            }
            let total = (metres[0] * metres[0] + metres[1] * metres[1] + metres[2] * metres[2]).squareRoot()
            result.set("acceleration_total", .number(DecimalRounding.round(total, places: 2)), unit: "m/s²")
        }
        return result
    }
}
