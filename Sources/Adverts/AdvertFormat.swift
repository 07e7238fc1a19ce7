/// The broadcast formats gattbridge decodes; the raw values are the names of the config's `advert:` key and of the
/// CLI's JSON.
public enum AdvertFormat: String, Sendable, CaseIterable, Hashable {
    case bthome, xiaomi, pvvx, atc, govee, ruuvi, ibeacon, eddystone

    /// Presence-only formats: they carry identity, not readings.
    public var isBeacon: Bool { self == .ibeacon || self == .eddystone }
}
