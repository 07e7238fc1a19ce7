/// The custom firmwares of the Xiaomi LYWSD03MMC family (service data 0x181A, "Environmental Sensing"):
/// pvvx's 15-byte little-endian record and atc1441's older 13-byte big-endian one. Both start with the sender's
/// address; the length tells them apart. Names and units are those of the other thermometer formats.
public enum ThermometerFirmwareDecoder {
    public static let uuid: UInt16 = 0x181A

    /// pvvx: address (LE), temperature 0.01 °C (int16), humidity 0.01 % (uint16), battery mV (uint16), battery %,
    /// measurement counter, flags.
    public static func decodePvvx(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.serviceData(uuid) else { throw .notRecognised }
        guard data.count == 15 else { throw .malformed("pvvx record of \(data.count) bytes, not 15") }
        var result = AdvertResult(format: .pvvx, packetID: UInt32(data[13]))
        result.set("temperature", .number(Double(ByteReading.signedLE(data[6..<8])) / 100), unit: "°C")
        result.set("humidity", .number(Double(ByteReading.unsignedLE(data[8..<10])) / 100), unit: "%")
        result.set("battery", .integer(Int64(data[12])), unit: "%")
        result.set("voltage", .number(Double(ByteReading.unsignedLE(data[10..<12])) / 1000), unit: "V")
        return result
    }

    /// atc1441: address (BE), temperature 0.1 °C (int16 BE), humidity %, battery %, battery mV (uint16 BE), counter.
    public static func decodeATC(_ broadcast: Broadcast) throws(AdvertError) -> AdvertResult {
        guard let data = broadcast.serviceData(uuid) else { throw .notRecognised }
        guard data.count == 13 else { throw .malformed("atc1441 record of \(data.count) bytes, not 13") }
        var result = AdvertResult(format: .atc, packetID: UInt32(data[12]))
        result.set("temperature", .number(Double(ByteReading.signedBE(data[6..<8])) / 10), unit: "°C")
        result.set("humidity", .integer(Int64(data[8])), unit: "%")
        result.set("battery", .integer(Int64(data[9])), unit: "%")
        result.set("voltage", .number(Double(ByteReading.unsignedBE(data[10..<12])) / 1000), unit: "V")
        return result
    }
}
