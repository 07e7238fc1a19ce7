import BridgeFeatureHost
import BridgeModel
import Codecs
import Config
import MQTT

/// `FleetFeature`'s decisions (docs/fleet.md), as a value type: core events and timers in, effects out, no I/O
/// and no clock of its own. It keeps one `OwnershipMachine` per device and what they share: the fleet settings,
/// the topics, whether the broker is up, the other bridges' states, and the filters subscribed.
///
/// Invariants:
/// - outside a fleet (no `bridge:` section) it keeps nothing and subscribes to nothing;
/// - the filters are subscribed again only when they change (a new subscription replays every retained record);
/// - a machine created while the broker is up (a device added) learns the live bridges from `bridgeStates`, as the
///   retained states will not come again;
/// - a device given up because the fleet id, its timings or the base topic changed is claimed afresh.
struct FleetMachine: Sendable {
    enum Timer: Sendable, Equatable {
        case device(String, OwnershipTimer, token: UInt64)
        /// After this bridge's state was forged `offline`: its devices' availability is said again, once the other
        /// bridges' `offline` for them (they took the forgery for a will) has landed.
        case reassertAvailability
    }

    enum Effect: Sendable, Equatable {
        case publish(topic: String, payload: String, retain: Bool)
        case subscribe(String, retained: Bool)
        case unsubscribe(String)
        case setOwnership(String, owned: Bool)
        case setHeld(String, held: Bool)
        case schedule(at: ContinuousClock.Instant, Timer)
        /// Every device's availability said again (`FeatureContext.requestRepublish`).
        case republishAvailability
        case notice(String)
        case info(String)
        /// One device machine's step, for the debug log: the only trace of a decision that was not taken.
        case trace(device: String, event: OwnershipEvent, from: OwnershipMachine.State, to: OwnershipMachine.State, rssi: Int?,
                   actions: [OwnershipAction])
    }

    /// How long after a forged `offline` this bridge says its devices' availability again.
    static let reassertDelay: Duration = .seconds(1)

    private(set) var fleet: FleetSettings?
    private var topics = BridgeTopics(base: "")
    private var devices: [String: DeviceConfig] = [:]           // by name
    private var byLevel: [String: String] = [:]                 // topic level → name
    private(set) var machines: [String: OwnershipMachine] = [:]
    private var brokerUp = false
    private(set) var filters: [String] = []
    private var reassertPending = false
    private var bridgeStates: [String: Bool] = [:]

    /// `unixNow`: seconds since the epoch, for the owner records' `since`.
    mutating func handle(_ input: FeatureInput<Timer>, now: ContinuousClock.Instant, unixNow: Int64) -> [Effect] {
        var out: [Effect] = []
        switch input {
        case .event(.configApplied(_, let config)): apply(config, now: now, unixNow: unixNow, &out)
        case .event(.brokerConnected):
            brokerUp = true
            bridgeStates = [:]
            feedAll(.brokerConnected, now: now, unixNow: unixNow, &out)
        case .event(.brokerDisconnected):
            brokerUp = false
            feedAll(.brokerDisconnected, now: now, unixNow: unixNow, &out)
        case .event(.sighting(let device, let rssi)):
            feed(device.name, rssi.map { .sighting($0) } ?? .unseen, now: now, unixNow: unixNow, &out)
        case .event(.released(let device)): feed(device.name, .released, now: now, unixNow: unixNow, &out)
        case .event(.room(let device, let room)): feed(device.name, .room(room), now: now, unixNow: unixNow, &out)
        case .event(.availability(let device, let online)):
            feed(device.name, .link(up: online), now: now, unixNow: unixNow, &out)
        case .event(.message(let message)): heard(message, now: now, unixNow: unixNow, &out)
        case .timer(.device(let name, let timer, let token)):
            feed(name, .timer(timer, token: token), now: now, unixNow: unixNow, &out)
        case .timer(.reassertAvailability):
            reassertPending = false
            out.append(.republishAvailability)
        case .event:
            break
        }
        return out
    }

    private mutating func apply(_ config: BridgeConfig, now: ContinuousClock.Instant, unixNow: Int64,
                                _ out: inout [Effect]) {
        let old = machines
        fleet = config.fleet
        guard let fleet = config.fleet else {
            out += filters.map { .unsubscribe($0) }
            filters = []
            machines = [:]
            devices = [:]
            return
        }
        let oldTopics = topics
        topics = BridgeTopics(settings: config.mqtt)
        if oldTopics.base != topics.base { bridgeStates = [:] }   // the new base's states are replayed
        let newDevices = Dictionary(config.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for (name, machine) in old.sorted(by: { $0.key < $1.key }) where machine.owns && newDevices[name] == nil {
            // Removed from the config while ours: the record goes with it.
            if let device = devices[name] { out.append(.publish(topic: oldTopics.owner(device), payload: "", retain: true)) }
        }
        devices = newDevices
        byLevel = Dictionary(config.devices.map { ($0.topicLevel, $0.name) }, uniquingKeysWith: { a, _ in a })
        machines = [:]
        for device in config.devices {
            if let kept = old[device.name], kept.id == fleet.id, kept.handoverAfter == fleet.handoverAfter,
               kept.unreachableAfter == fleet.unreachableAfter, oldTopics.base == topics.base {
                machines[device.name] = kept
                continue
            }
            // A new id or base topic: what the old machine owned is given up and claimed afresh.
            if old[device.name]?.owns == true { out.append(.setOwnership(device.name, owned: false)) }
            machines[device.name] = OwnershipMachine(id: fleet.id, handoverAfter: fleet.handoverAfter,
                                                     unreachableAfter: fleet.unreachableAfter)
            guard brokerUp else { continue }
            feed(device.name, .brokerConnected, now: now, unixNow: unixNow, &out)
            for (bridge, online) in bridgeStates.sorted(by: { $0.key < $1.key }) {
                feed(device.name, .bridgeState(bridge, online: online), now: now, unixNow: unixNow, &out)
            }
        }
        let wanted = [topics.ownerFilter, topics.bridgeStateFilter, FleetFeature.requestFilter(topics)]
        if wanted != filters {
            out += filters.map { .unsubscribe($0) }
            filters = wanted
            // Records and states are retained: shared with the bridge API without a second SUBSCRIBE.
            out += filters.map { .subscribe($0, retained: $0 != FleetFeature.requestFilter(topics)) }
        }
    }

    private mutating func heard(_ message: MQTTMessage, now: ContinuousClock.Instant, unixNow: Int64,
                                _ out: inout [Effect]) {
        guard let fleet else { return }
        if let bridge = topics.parseBridgeState(message.topic) {
            let online = message.payloadString == "online"
            guard bridge == fleet.id else {
                bridgeStates[bridge] = online
                feedAll(.bridgeState(bridge, online: online), now: now, unixNow: unixNow, &out)
                return
            }
            // This bridge is connected, so `offline` on its own state is someone else's (its will only fires once it
            // is gone, its goodbye only after the features stopped): said again at once, before the other bridges
            // act on it as on a will.
            guard !online, brokerUp else { return }
            out.append(.notice("offline on this bridge's own state while it is connected (written by another client, or a stale retained one): publishing online again"))
            out.append(.publish(topic: topics.bridgeState, payload: "online", retain: true))
            guard !reassertPending else { return }
            reassertPending = true
            out.append(.schedule(at: now + Self.reassertDelay, .reassertAvailability))
        } else if let level = topics.parseOwner(message.topic), let name = byLevel[level] {
            feed(name, .owner(FleetFeature.record(message.payloadString)), now: now, unixNow: unixNow, &out)
        } else if let level = FleetFeature.parseRequest(topics, message.topic), let name = byLevel[level],
                  let (bridge, rssi) = FleetFeature.request(message.payloadString) {
            feed(name, .handoverRequested(by: bridge, rssi: rssi), now: now, unixNow: unixNow, &out)
        }
    }

    private mutating func feedAll(_ event: OwnershipEvent, now: ContinuousClock.Instant, unixNow: Int64,
                                  _ out: inout [Effect]) {
        for name in machines.keys.sorted() { feed(name, event, now: now, unixNow: unixNow, &out) }
    }

    private mutating func feed(_ name: String, _ event: OwnershipEvent, now: ContinuousClock.Instant, unixNow: Int64,
                               _ out: inout [Effect]) {
        guard var machine = machines[name], let device = devices[name] else { return }
        let before = machine.state
        let actions = machine.handle(event, now: now, unixNow: unixNow)
        machines[name] = machine
        out.append(.trace(device: name, event: event, from: before, to: machine.state, rssi: machine.rssi,
                          actions: actions))
        for action in actions {
            switch action {
            case .publishOwner(let record):
                out.append(.publish(topic: topics.owner(device), payload: FleetFeature.payload(record), retain: true))
            case .requestHandover(let rssi):
                out.append(.info("asking for device \(name): seen at \(rssi) dBm"))
                out.append(.publish(topic: FleetFeature.requestTopic(topics, device),
                                    payload: JSONValue.object([("bridge", .string(fleet?.id ?? "")),
                                                               ("rssi", .int(rssi))]).serialized,
                                    retain: false))
            case .own(let owned): out.append(.setOwnership(name, owned: owned))
            case .hold(let held): out.append(.setHeld(name, held: held))
            case .markOffline: out.append(.publish(topic: topics.availability(device), payload: "offline", retain: true))
            case .schedule(let timer, let delay, let token):
                out.append(.schedule(at: now + delay, .device(name, timer, token: token)))
            }
        }
    }
}
