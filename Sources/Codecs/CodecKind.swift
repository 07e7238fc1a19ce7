/// The codecs a channel can name in the config (docs/configuration.md#codecs). The raw value is the config spelling.
public enum CodecKind: String, CaseIterable, Sendable {
    case hex, base64, text, uint8, int8, uint16, int16, uint32, int32, uint16be, int16be, uint32be, int32be
    case float32, float64, float32be, float64be, bool
    case batteryLevel = "battery_level", heartRateMeasurement = "heart_rate_measurement"

    /// Decode-only codecs parse standard characteristics whose values the bridge has no business writing.
    public var canEncode: Bool {
        switch self {
        case .batteryLevel, .heartRateMeasurement: false
        default: true
        }
    }
}

extension CodecKind: CustomStringConvertible {
    public var description: String { rawValue }
}
