/// Decodes a broadcast in the first of the given formats it carries. The daemon passes a device's configured
/// format; `auto` devices and the CLI try them all.
public enum AdvertDecoder {
    /// The order formats are tried in when several are allowed: the ones with a UUID or company of their own first,
    /// Govee (any company id) after Ruuvi, beacons last.
    public static let order: [AdvertFormat] = [.bthome, .xiaomi, .pvvx, .atc, .ruuvi, .govee, .ibeacon, .eddystone]

    /// - Throws: `.notRecognised` when no allowed format is present; otherwise the error of the first format whose
    ///   data is there but cannot be read (malformed, or not decryptable with `bindkey`).
    public static func decode(_ broadcast: Broadcast, formats: Set<AdvertFormat> = Set(AdvertFormat.allCases),
                              bindkey: [UInt8]? = nil) throws(AdvertError) -> AdvertResult {
        try decode(broadcast, trying: order.filter(formats.contains), bindkey: bindkey)
    }

    /// The same with the formats already in `order`'s order (`AdvertSelection.ordered`): the daemon decodes every
    /// broadcast of every device, and a set built and hashed for each one kept the standard library's hashing and
    /// set allocation resident (docs/dev/MEMORY.md).
    public static func decode(_ broadcast: Broadcast, trying formats: [AdvertFormat],
                              bindkey: [UInt8]? = nil) throws(AdvertError) -> AdvertResult {
        var firstError: AdvertError?
        for format in formats {
            do {
                return try decode(broadcast, as: format, bindkey: bindkey)
            } catch .notRecognised {
                continue
            } catch {
                firstError = firstError ?? error
            }
        }
        throw firstError ?? .notRecognised
    }

    public static func decode(_ broadcast: Broadcast, as format: AdvertFormat,
                              bindkey: [UInt8]? = nil) throws(AdvertError) -> AdvertResult {
        switch format {
        case .bthome: return try BTHomeDecoder.decode(broadcast, bindkey: bindkey)
        case .xiaomi: return try XiaomiDecoder.decode(broadcast, bindkey: bindkey)
        case .pvvx:
            // Both firmwares share the UUID: an atc record is not a malformed pvvx one.
            guard broadcast.serviceData(ThermometerFirmwareDecoder.uuid)?.count != 13 else { throw .notRecognised }
            return try ThermometerFirmwareDecoder.decodePvvx(broadcast)
        case .atc:
            guard broadcast.serviceData(ThermometerFirmwareDecoder.uuid)?.count != 15 else { throw .notRecognised }
            return try ThermometerFirmwareDecoder.decodeATC(broadcast)
        case .govee: return try GoveeDecoder.decode(broadcast)
        case .ruuvi: return try RuuviDecoder.decode(broadcast)
        case .ibeacon: return try BeaconDecoder.decodeIBeacon(broadcast)
        case .eddystone: return try BeaconDecoder.decodeEddystone(broadcast)
        }
    }
}
