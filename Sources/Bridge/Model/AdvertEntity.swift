/// One thing a broadcaster reports, as Home Assistant is told about it.
public enum AdvertEntity: Sendable, Equatable {
    /// A reading on `B/D/<name>`; `unit` as the decoder gives it.
    case measurement(name: String, unit: String?, kind: Kind)
    /// Actions on `B/D/<name>` of the given types.
    case event(name: String, types: [String])
    /// A beacon's `home`/`not_home` on `B/D/presence`.
    case presence

    public enum Kind: Sendable, Equatable {
        case number, binary, text
    }

    /// The topic level under the device.
    public var name: String {
        switch self {
        case .measurement(let name, _, _), .event(let name, _): name
        case .presence: Self.presenceLevel
        }
    }

    /// Here rather than in `AdvertPayloads`, so Home Assistant's entities name it without reaching up into the
    /// advert feature (docs/dev/ARCHITECTURE.md#layers).
    package static let presenceLevel = "presence"
}
