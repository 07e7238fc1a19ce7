import BridgeFeatureHost
import BridgeFleet
import BridgeModel
import Codecs
import Config
import MQTT

/// The bridge API's decisions (docs/bridge-api.md; in a fleet docs/fleet.md) as a value type: core events, the
/// settle timer and finished long requests in, actions out; no I/O, no clock, no `await`. `BridgeAPIFeature` feeds it
/// and carries the actions out. What the answers and the retained listings say of the devices, the adapters and the
/// links is read from the read model when they are written (docs/dev/ARCHITECTURE.md, "The read model"), so this
/// keeps only what the read model has not: the config's topics, the fleet's directory, the requests held and
/// running, and what it last wrote.
///
/// Invariants:
/// - before the config arrives nothing is subscribed, answered, held or published;
/// - in a fleet, shared requests wait until the directory settled (the retained bridge states had `listenTime` to
///   arrive after a broker connect or joining), at most `maxHeld` of them, and are then decided in arrival order;
///   after that a shared request gets one answer from the fleet (`FleetDirectory.route`); leaving the fleet drops
///   them;
/// - only the latest settle timer counts: a reconnect or a new fleet arms a new token and the older ones are ignored;
/// - at most `maxLongRequests` scans and inspections run at once; one more is answered `busy`, never queued;
/// - each listing topic (`B/bridge/devices`, in a fleet also `B/bridge/<id>/devices`) is written only when its text
///   changed since it was last written there, or after a broker connect, a change of topics, or (the shared one) of
///   coordinator, when the retained copy may be lost or someone else's;
/// - a device's link, placement or owner changing (its events) asks for the listing again: the read model has the
///   change before the event arrives;
/// - a retained request is never served: it would run again at every restart and reconnect.
struct BridgeAPIMachine: Sendable {
    enum Input: Sendable {
        case event(CoreEvent)
        /// A scan or inspection finished.
        case longDone
        /// The listen time after a broker connect (or after joining a fleet) with this token ended.
        case settle(UInt64)
    }

    enum Action: Sendable, Equatable {
        case subscribe(String, retained: Bool)
        case unsubscribe(String)
        /// Published retained at QoS 1; an empty payload clears the topic.
        case retain(topic: String, payload: String)
        /// `B/bridge/info` to these topics, with `"bridge"` in a fleet.
        case publishInfo(topics: [String], bridge: String?)
        /// The devices' listing is to be made from the read model and handed back through `listed(_:)`.
        case listDevices
        /// An answer to `request` on `on` (and its MQTT 5 Response Topic).
        case answer(MQTTMessage, on: String, payload: String)
        /// Served at once; answered on `on` when `answered`, else (applied silently in a fleet) only logged.
        case serve(BridgeRequest, MQTTMessage, on: String, answered: Bool)
        /// A scan or inspection to run on a child task; `longDone` comes back when it is answered.
        case startLong(LongRequest)
        /// `settle(token)` is due in `listenTime`.
        case armSettle(token: UInt64)
        case warning(String)
        case notice(String)
    }

    /// A scan or inspection, and where its answer goes.
    struct LongRequest: Sendable, Equatable {
        let request: BridgeRequest
        let message: MQTTMessage
        let responseTopic: String
        /// Names the scan in the discovery coordinator's log (`bridge-api/<verb>/<n>`).
        let requester: String
        /// The configured adapter, if any.
        let adapter: String?
    }

    static let maxLongRequests = 4
    /// Fleet: shared requests that arrive before the directory settled are held, at most this many.
    static let maxHeld = 64

    private(set) var config: BridgeConfig?
    /// Fleet (config `bridge:`): who answers and who writes the shared topics; nil for a lone bridge.
    private(set) var fleet: FleetDirectory?
    /// Fleet: whether this bridge writes the shared topics now (it is the coordinator).
    private(set) var sharedPublished = false
    private(set) var held: [MQTTMessage] = []
    private(set) var longRequests = 0
    private(set) var settleToken: UInt64 = 0
    private var sequence = 0
    private var filters: [(filter: String, retained: Bool)] = []
    /// The listings as last written (shared; a fleet's own): nil when the next one must be written whatever it says.
    private var lastDevices: String?
    private var lastOwnDevices: String?
    /// The adapters' names the core last said: `B/bridge/info` names them, so it changes only when they do.
    private var adapterNames: [String]?

    /// Where `BusyAnswers` answers from outside the loop; nil before the config.
    var busyRouting: BusyAnswers.Routing? {
        config.map { config in
            BusyAnswers.Routing(state: BridgeAPITopics(config: config), replies: ReplyTopicRule(config: config),
                                answersShared: fleet == nil || sharedPublished)
        }
    }

    mutating func handle(_ input: Input) -> [Action] {
        var out: [Action] = []
        var received: [(MQTTMessage, verb: String, shared: Bool)] = []
        var listen = false
        switch input {
        case .longDone:
            longRequests -= 1
        case .settle(let token):
            guard token == settleToken, fleet != nil else { break }
            fleet?.settle()
            refreshShared(&out)
            let held = self.held
            self.held = []
            for message in held {
                if let (verb, shared) = verb(of: message.topic) { received.append((message, verb, shared)) }
            }
        case .event(.configApplied(_, let config)):
            listen = configure(config, &out)
        case .event(.brokerConnected):
            lastDevices = nil
            lastOwnDevices = nil
            if fleet != nil {
                // The retained states come again; until they did, this bridge speaks only for itself.
                fleet?.unsettle()
                sharedPublished = false
                listen = true
            }
            publishInfo(&out)
            listDevices(&out)
        case .event(.availability), .event(.deviceEvent):
            listDevices(&out)
        case .event(.ownership(let device, let owned)):
            guard fleet != nil else { break }
            fleet?.setOwned(device.topicLevel, owned)
            listDevices(&out)
        case .event(.adapters(let statuses, _)):
            let names = statuses.map(\.name)
            let changed = names != adapterNames
            adapterNames = names
            if changed { publishInfo(&out) }
            listDevices(&out)
        case .event(.message(let message)):
            if let (verb, shared) = verb(of: message.topic) {
                received.append((message, verb, shared))
            } else if fleetFact(message) {
                refreshShared(&out)
                listDevices(&out)
            }
        case .event:
            break
        }
        if listen {
            settleToken &+= 1
            out.append(.armSettle(token: settleToken))
        }
        for (message, verb, shared) in received { receive(message, verb: verb, shared: shared, &out) }
        return out
    }

    /// The listing `listDevices` asked for, as made: written where it changed.
    mutating func listed(_ text: String) -> [Action] {
        guard let config else { return [] }
        var out: [Action] = []
        if let fleet, text != lastOwnDevices {
            lastOwnDevices = text
            out.append(.retain(topic: BridgeTopics(base: config.mqtt.baseTopic, bridgeID: fleet.id).bridgeOwn("devices"),
                               payload: text))
        }
        guard fleet == nil || sharedPublished, text != lastDevices else { return out }
        lastDevices = text
        out.append(.retain(topic: config.mqtt.baseTopic + "/bridge/devices", payload: text))
        return out
    }

    /// The verb of a request topic and whether it is shared; nil before the config or for any other topic.
    func verb(of topic: String) -> (verb: String, shared: Bool)? {
        config.flatMap { BridgeAPITopics(config: $0).verb(of: topic) }
    }

    // MARK: - Config and the retained topics

    /// True when this joined a fleet (or changed its id or base topic): its bridge states are to be listened for.
    private mutating func configure(_ config: BridgeConfig, _ out: inout [Action]) -> Bool {
        let old = self.config
        self.config = config
        let filters = BridgeAPITopics.filters(config)
        if filters.map(\.filter) != self.filters.map(\.filter) {
            for (filter, _) in self.filters { out.append(.unsubscribe(filter)) }
            for (filter, retained) in filters { out.append(.subscribe(filter, retained: retained)) }
            self.filters = filters
        }
        if let old, old.mqtt.baseTopic != config.mqtt.baseTopic {
            out.append(.retain(topic: old.mqtt.baseTopic + "/bridge/devices", payload: ""))
            out.append(.retain(topic: old.mqtt.baseTopic + "/bridge/info", payload: ""))
            lastDevices = nil
        }
        var listen = false
        let ownTopics = config.fleet.map { BridgeTopics(base: config.mqtt.baseTopic, bridgeID: $0.id) }
        if fleet?.id != config.fleet?.id || old?.mqtt.baseTopic != config.mqtt.baseTopic {
            if let old, let oldID = old.fleet?.id {
                // This bridge's own view under its old name or base topic would stay retained for good.
                let oldTopics = BridgeTopics(base: old.mqtt.baseTopic, bridgeID: oldID)
                if oldTopics != ownTopics {
                    out.append(.retain(topic: oldTopics.bridgeOwn("devices"), payload: ""))
                    out.append(.retain(topic: oldTopics.bridgeOwn("info"), payload: ""))
                }
            }
            fleet = config.fleet.map { FleetDirectory(id: $0.id) }
            sharedPublished = false
            lastOwnDevices = nil
            lastDevices = nil
            listen = fleet != nil
            // Left the fleet: nothing holds shared requests any more.
            if fleet == nil { held = [] }
        }
        publishInfo(&out)
        listDevices(&out)
        return listen
    }

    /// Feeds a fleet fact (a bridge's state, a device's owner record or availability) to the directory; true when
    /// it was one.
    private mutating func fleetFact(_ message: MQTTMessage) -> Bool {
        guard let config, fleet != nil else { return false }
        let topics = BridgeTopics(base: config.mqtt.baseTopic, bridgeID: config.fleet?.id)
        let text = message.payloadString
        if let bridge = topics.parseBridgeState(message.topic) {
            fleet?.bridgeState(bridge, online: text == "online")
        } else if let level = topics.parseOwner(message.topic) {
            fleet?.owner(level, FleetFeature.record(text)?.bridge)
        } else if let level = BridgeAPITopics.parseAvailability(topics, message.topic) {
            fleet?.availability(level, online: text == "online" ? true : text == "offline" ? false : nil)
        } else {
            return false
        }
        return true
    }

    /// Fleet: starts writing the shared topics when this bridge became the coordinator (at once, over whatever the
    /// previous one left), stops when it no longer is.
    private mutating func refreshShared(_ out: inout [Action]) {
        guard let fleet, fleet.isCoordinator != sharedPublished else { return }
        sharedPublished = fleet.isCoordinator
        if fleet.isCoordinator {
            out.append(.notice("this bridge answers the fleet's shared bridge requests now (the live bridge with the lowest id)"))
            lastDevices = nil
            publishInfo(&out)
            listDevices(&out)
        } else {
            out.append(.notice("bridge \(fleet.coordinator) answers the fleet's shared bridge requests now"))
        }
    }

    /// Lone bridge: `B/bridge/info`. Fleet: `B/bridge/<id>/info`, and the shared one from the coordinator.
    private func publishInfo(_ out: inout [Action]) {
        guard let config else { return }
        let shared = config.mqtt.baseTopic + "/bridge/info"
        guard let fleet else { return out.append(.publishInfo(topics: [shared], bridge: nil)) }
        let own = BridgeTopics(base: config.mqtt.baseTopic, bridgeID: fleet.id).bridgeOwn("info")
        out.append(.publishInfo(topics: sharedPublished ? [own, shared] : [own], bridge: fleet.id))
    }

    private func listDevices(_ out: inout [Action]) {
        if config != nil { out.append(.listDevices) }
    }

    // MARK: - Requests

    /// One request off the broker: held (a shared one in a fleet that has not settled), left to another bridge of
    /// the fleet, answered, served, or started as a long request.
    private mutating func receive(_ request: MQTTMessage, verb: String, shared: Bool, _ out: inout [Action]) {
        guard let config else { return }
        var message = request
        if let topic = message.responseTopic, !ReplyTopicRule(config: config).allows(topic) {
            // Answered on B/bridge/response/<verb> only: the requester's topic is one the bridge does not answer on.
            out.append(.warning("response topic \(ReportText.escaped(topic, maxBytes: 128)) of a bridge request ignored"))
            message.responseTopic = nil
        }
        if message.retain {
            out.append(.warning("retained bridge request on \(message.topic) ignored"))
            return
        }
        let responseTopic = BridgeAPITopics(config: config).responseTopic(verb, shared: shared)
        let parsed = BridgeRequest.parse(verb: verb, payload: message.payload)
        var route = FleetDirectory.Route.answer
        if shared, let fleet {
            guard fleet.settled else {
                if held.count < Self.maxHeld {
                    held.append(message)
                } else {
                    out.append(.warning("bridge request on \(message.topic) dropped: the fleet's bridge states have not arrived yet"))
                }
                return
            }
            let request = try? parsed.get()
            var level: String?
            if case .address(let address)? = request?.parameters {
                level = config.devices.first(where: { $0.address == address })?.topicLevel
            }
            route = fleet.route(request?.verb, inspecting: level)
        }
        switch (parsed, route) {
        case (_, .ignore):
            return
        case (.failure(let failure), _):
            if route == .answer {
                out.append(.answer(message, on: responseTopic,
                                   payload: BridgeResponse.error(failure.message, transaction: failure.transaction)))
            }
        case (.success(let request), _):
            switch request.parameters {
            case .scan, .address:
                guard longRequests < Self.maxLongRequests else {
                    let busy = "busy: \(Self.maxLongRequests) scans or inspections are running"
                    out.append(.answer(message, on: responseTopic,
                                       payload: BridgeResponse.error(busy, transaction: request.transaction)))
                    return
                }
                longRequests += 1
                sequence += 1
                out.append(.startLong(LongRequest(request: request, message: message, responseTopic: responseTopic,
                                                  requester: "bridge-api/\(request.verb.rawValue)/\(sequence)",
                                                  adapter: config.bluetooth.adapter)))
            default:
                out.append(.serve(request, message, on: responseTopic, answered: route == .answer))
            }
        }
    }
}
