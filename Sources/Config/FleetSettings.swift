/// The `bridge:` section (docs/fleet.md): this bridge's name in a fleet of bridges sharing one broker and base topic.
///
/// A bridge is in a fleet exactly when the section is present. Without it nothing changes from a single bridge: the
/// bridge state stays `B/bridge/state` and every device is this bridge's own. With it the state moves to
/// `B/bridge/<id>/state` (which carries the will: libmosquitto sets one will per connection, and a shared
/// `B/bridge/state` would say only which bridge wrote last) and devices are shared through `B/D/owner`.
public struct FleetSettings: Sendable, Equatable {
    /// `id`: unique among the bridges of the fleet; a topic level (sanitised). Default: the host name.
    public var id: String
    /// `handover_after`: how long another bridge must see a device ≥ 10 dB stronger than its owner before it takes
    /// the device over (default 30 s). Lower it only for tests: the hysteresis is what stops flapping.
    public var handoverAfter: Duration
    /// `unreachable_after`: how long an owner may fail to bring its device online before it reports that it cannot
    /// reach it, so a bridge that hears the device can ask for it (default 60 s, the adapters' wedge window).
    public var unreachableAfter: Duration

    public init(id: String = FleetSettings.defaultID, handoverAfter: Duration = .seconds(30),
                unreachableAfter: Duration = .seconds(60)) {
        self.id = id
        self.handoverAfter = handoverAfter
        self.unreachableAfter = unreachableAfter
    }

    /// The host name as a topic level (with `-bridge` appended to a reserved one).
    public static var defaultID: String {
        let level = sanitizeTopicLevel(Hostname.current)
        if level.isEmpty { return "localhost" }
        return reservedIDs.contains(level) ? level + "-bridge" : level
    }

    /// The levels under `B/bridge/` that the bridge's own topics use: an id among them would make `B/bridge/<id>/…`
    /// read as one of them (`B/bridge/request/state` under the request filter).
    public static let reservedIDs: Set<String> = ["state", "event", "log", "devices", "info", "adapters", "diagnostics",
                                                  "request", "response"]
}

extension ConfigValidator {
    mutating func fleetSettings(_ node: YAMLNode) -> FleetSettings {
        var settings = FleetSettings()
        guard !node.isNull else { return settings }    // `bridge:` alone: a fleet member named after the host
        guard let fields = fields(of: node, allowed: ["id", "handover_after", "unreachable_after"], context: "bridge") else { return settings }
        if let value = fields["id"], let id = nonEmptyString(value, key: "id", context: "bridge") {
            let level = sanitizeTopicLevel(id)
            if level != id || level.isEmpty {
                report(value, "bridge.id \"\(id)\" is not a valid topic level (no + # / $ or control characters)")
            } else if FleetSettings.reservedIDs.contains(level) {
                report(value, "bridge.id \"\(id)\" is a level the bridge's own topics use (\(FleetSettings.reservedIDs.sorted().joined(separator: ", ")))")
            } else {
                settings.id = level
            }
        }
        if let value = fields["handover_after"], let duration = seconds(value, key: "handover_after", context: "bridge", minimum: 1) {
            settings.handoverAfter = duration
        }
        if let value = fields["unreachable_after"],
           let duration = seconds(value, key: "unreachable_after", context: "bridge", minimum: 1) {
            settings.unreachableAfter = duration
        }
        return settings
    }
}
