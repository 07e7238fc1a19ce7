import BridgeModel
import Config

/// The bridge API's topics as the config names them (docs/bridge-api.md; in a fleet docs/fleet.md): what the
/// API's machine and `BusyAnswers` both route by, so a request turned away is answered where a served one would be.
struct BridgeAPITopics: Sendable, Equatable {
    var base: String
    var fleetID: String?
    var enabled: Bool

    init(config: BridgeConfig) {
        base = config.mqtt.baseTopic
        fleetID = config.fleet?.id
        enabled = config.bridgeAPI
    }

    /// The verb of a request topic: shared `B/bridge/request/<verb>`, or in a fleet this bridge's own
    /// `B/bridge/<id>/request/<verb>` (checked first: an id such as `request` must not read as a shared verb); nil
    /// for anything else.
    func verb(of topic: String) -> (verb: String, shared: Bool)? {
        guard enabled else { return nil }
        if let fleetID {
            let own = BridgeTopics(base: base, bridgeID: fleetID).bridgeOwn("request") + "/"
            if topic.hasPrefix(own) { return (String(topic.dropFirst(own.count)), false) }
        }
        let prefix = base + "/bridge/request/"
        guard topic.hasPrefix(prefix) else { return nil }
        return (String(topic.dropFirst(prefix.count)), true)
    }

    /// Where the answer to `verb` goes: `B/bridge/response/<verb>`, or this bridge's own for its own requests.
    func responseTopic(_ verb: String, shared: Bool) -> String {
        guard !shared, let fleetID else { return base + "/bridge/response/" + verb }
        return BridgeTopics(base: base, bridgeID: fleetID).bridgeOwn("response") + "/" + verb
    }

    /// The request topics (unless `bridge_api: false`) and, in a fleet, the retained facts the `FleetDirectory`
    /// needs; `retained` marks the filters the `FleetFeature` holds too (see `FeatureContext.subscribe`).
    static func filters(_ config: BridgeConfig) -> [(filter: String, retained: Bool)] {
        let base = config.mqtt.baseTopic
        var filters: [(filter: String, retained: Bool)] = []
        if config.bridgeAPI { filters.append((base + "/bridge/request/#", false)) }
        guard let fleet = config.fleet else { return filters }
        let topics = BridgeTopics(base: base, bridgeID: fleet.id)
        if config.bridgeAPI { filters.append((topics.bridgeOwn("request") + "/#", false)) }
        filters.append((topics.ownerFilter, true))
        filters.append((topics.bridgeStateFilter, true))
        filters.append((base + "/+/availability", false))
        return filters
    }

    /// The device topic level of `B/<level>/availability` (not the bridge's own); nil for any other topic.
    static func parseAvailability(_ topics: BridgeTopics, _ topic: String) -> String? {
        guard topic.hasPrefix(topics.base + "/") else { return nil }
        let levels = topic.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, levels[1] == "availability", levels[0] != "bridge" else { return nil }
        return String(levels[0])
    }
}
