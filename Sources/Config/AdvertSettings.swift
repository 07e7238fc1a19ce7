import Adverts

/// The top-level `adverts:` section (docs/adverts.md): whether the bridge listens for broadcasts at all, which
/// formats it publishes for devices nobody saved, how many of those it tracks, and when a silent broadcaster is
/// said to be offline.
public struct AdvertSettings: Sendable, Equatable {
    public static let defaultAutoLimit = 100
    public static let defaultTimeout: Duration = .seconds(900)

    /// Off by default: continuous scanning costs radio time on a Pi's combined Wi-Fi/Bluetooth chip.
    public var enabled: Bool
    /// Unsaved broadcasters in these formats are published too, as `<format>-<address>` devices.
    public var auto: [AdvertFormat]
    /// At most this many unsaved broadcasters are tracked; beyond it nothing is kept, so memory stays bounded.
    public var autoLimit: Int
    /// A passive device is offline after this long without a broadcast.
    public var timeout: Duration

    public init(enabled: Bool = false, auto: [AdvertFormat] = [], autoLimit: Int = Self.defaultAutoLimit,
                timeout: Duration = Self.defaultTimeout) {
        self.enabled = enabled
        self.auto = auto
        self.autoLimit = autoLimit
        self.timeout = timeout
    }
}

/// A device's `advert:` key: which format its broadcasts are read as (`auto`: whichever decodes).
public enum AdvertSelection: Sendable, Equatable {
    case auto
    case format(AdvertFormat)

    public init?(_ text: String) {
        if text == "auto" { self = .auto } else if let format = AdvertFormat(rawValue: text) { self = .format(format) }
        else { return nil }
    }

    /// The formats a broadcast of this device is tried in.
    public var formats: Set<AdvertFormat> {
        switch self {
        case .auto: Set(AdvertFormat.allCases)
        case .format(let format): [format]
        }
    }

    /// The same formats in the order the decoder tries them (`AdvertDecoder.order`), for decoding each broadcast.
    public var ordered: [AdvertFormat] {
        switch self {
        case .auto: AdvertDecoder.order
        case .format(let format): [format]
        }
    }

    public var name: String {
        switch self {
        case .auto: "auto"
        case .format(let format): format.rawValue
        }
    }
}
