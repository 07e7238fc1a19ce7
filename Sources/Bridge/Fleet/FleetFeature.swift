import Codecs
import Config
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MQTT

/// Several bridges on one broker (docs/fleet.md): runs one `OwnershipMachine` per device over the retained `B/D/owner`
/// records, every bridge's `B/bridge/<id>/state`, the handover requests on `B/D/owner/request` and this bridge's own
/// sightings, and tells the core which devices this bridge owns. Does nothing unless the config has `bridge:`.
struct FleetFeature: BridgeFeature {
    let logger: Logger

    enum Timer: Sendable {
        case device(String, OwnershipTimer, token: UInt64)
        /// After this bridge's state was forged `offline`: its devices' availability is said again, once the other
        /// bridges' `offline` for them (they took the forgery for a will) has landed.
        case reassertAvailability
    }

    /// How long after a forged `offline` this bridge says its devices' availability again.
    static let reassertDelay: Duration = .seconds(1)

    func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var fleet: FleetSettings?
        var topics = BridgeTopics(base: "")
        var devices: [String: DeviceConfig] = [:]                // by name
        var byLevel: [String: String] = [:]                      // topic level → name
        var machines: [String: OwnershipMachine] = [:]
        var brokerUp = false
        var filters: [String] = []
        var reassertPending = false
        /// The other bridges' states as last seen since the broker connected: a machine created later (a device
        /// added) learns from them which bridges are live, as the retained states will not come again.
        var bridgeStates: [String: Bool] = [:]

        func apply(_ name: String, _ actions: [OwnershipAction]) -> [(at: ContinuousClock.Instant, timer: Timer)] {
            guard let device = devices[name] else { return [] }
            var timers: [(at: ContinuousClock.Instant, timer: Timer)] = []
            for action in actions {
                switch action {
                case .publishOwner(let record):
                    context.publish(topics.owner(device), Self.payload(record), qos: 1, retain: true)
                case .requestHandover(let rssi):
                    logger.info("asking for device \(name): seen at \(rssi) dBm")
                    context.publish(Self.requestTopic(topics, device),
                                    JSONValue.object([("bridge", .string(fleet?.id ?? "")), ("rssi", .int(rssi))]).serialized,
                                    qos: 1, retain: false)
                case .own(let owned):
                    context.setOwnership(name, owned: owned)
                case .hold(let held):
                    context.setHeld(name, held: held)
                case .markOffline:
                    context.publish(topics.availability(device), "offline", qos: 1, retain: true)
                case .schedule(let timer, let delay, let token):
                    timers.append((.now + delay, .device(name, timer, token: token)))
                }
            }
            return timers
        }

        func feed(_ name: String, _ event: OwnershipEvent) -> [(at: ContinuousClock.Instant, timer: Timer)] {
            guard var machine = machines[name] else { return [] }
            let before = machine.state
            let actions = machine.handle(event, now: .now, unixNow: Int64(time(nil)))
            machines[name] = machine
            // Which input moved which device where: the only trace of a decision that was not taken.
            logger.debug("fleet \(name): \(event) in \(before) → \(machine.state) rssi=\(machine.rssi.map(String.init) ?? "none")",
                         metadata: actions.isEmpty ? [:] : ["actions": "\(actions)"])
            return apply(name, actions)
        }

        func feedAll(_ event: OwnershipEvent) -> [(at: ContinuousClock.Instant, timer: Timer)] {
            machines.keys.sorted().flatMap { feed($0, event) }
        }

        await runFeatureLoop(events, timer: Timer.self) { input in
            switch input {
            case .event(.configApplied(_, let config)):
                let old = machines
                fleet = config.fleet
                guard let fleet = config.fleet else {
                    for filter in filters { context.unsubscribe(filter) }
                    filters = []
                    machines = [:]
                    devices = [:]
                    return []
                }
                let oldTopics = topics
                topics = BridgeTopics(settings: config.mqtt)
                if oldTopics.base != topics.base { bridgeStates = [:] }   // the new base's states are replayed
                let newDevices = Dictionary(config.devices.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
                for (name, machine) in old where machine.owns && newDevices[name] == nil {
                    // Removed from the config while ours: the record goes with it.
                    if let device = devices[name] { context.publish(oldTopics.owner(device), "", qos: 1, retain: true) }
                }
                devices = newDevices
                byLevel = Dictionary(config.devices.map { ($0.topicLevel, $0.name) }, uniquingKeysWith: { a, _ in a })
                var timers: [(at: ContinuousClock.Instant, timer: Timer)] = []
                machines = [:]
                for device in config.devices {
                    if let kept = old[device.name], kept.id == fleet.id, kept.handoverAfter == fleet.handoverAfter,
                       kept.unreachableAfter == fleet.unreachableAfter, oldTopics.base == topics.base {
                        machines[device.name] = kept
                    } else {
                        // A new id or base topic: what the old machine owned is given up and claimed afresh.
                        if old[device.name]?.owns == true { context.setOwnership(device.name, owned: false) }
                        machines[device.name] = OwnershipMachine(id: fleet.id, handoverAfter: fleet.handoverAfter,
                                                                 unreachableAfter: fleet.unreachableAfter)
                        if brokerUp {
                            timers += feed(device.name, .brokerConnected)
                            for (bridge, online) in bridgeStates.sorted(by: { $0.key < $1.key }) {
                                timers += feed(device.name, .bridgeState(bridge, online: online))
                            }
                        }
                    }
                }
                // Subscribed again only when they change: a new subscription replays every retained record.
                let wanted = [topics.ownerFilter, topics.bridgeStateFilter, Self.requestFilter(topics)]
                if wanted != filters {
                    for filter in filters { context.unsubscribe(filter) }
                    filters = wanted
                    // Records and states are retained: shared with the bridge API without a second SUBSCRIBE.
                    for filter in filters { context.subscribe(filter, retained: filter != Self.requestFilter(topics)) }
                }
                return timers

            case .event(.brokerConnected):
                brokerUp = true
                bridgeStates = [:]
                return feedAll(.brokerConnected)

            case .event(.brokerDisconnected):
                brokerUp = false
                return feedAll(.brokerDisconnected)

            case .event(.sighting(let device, let rssi)):
                return feed(device.name, rssi.map { .sighting($0) } ?? .unseen)

            case .event(.released(let device)):
                return feed(device.name, .released)

            case .event(.room(let device, let room)):
                return feed(device.name, .room(room))

            case .event(.availability(let device, let online)):
                return feed(device.name, .link(up: online))

            case .event(.message(let message)):
                guard fleet != nil else { break }
                if let bridge = topics.parseBridgeState(message.topic) {
                    let online = message.payloadString == "online"
                    if bridge == fleet?.id {
                        // This bridge is connected, so `offline` on its own state is someone else's (its will only
                        // fires once it is gone, its goodbye only after the features stopped): said again at once,
                        // before the other bridges act on it as on a will.
                        guard !online, brokerUp else { break }
                        logger.notice("offline on this bridge's own state while it is connected (written by another client, or a stale retained one): publishing online again")
                        context.publish(topics.bridgeState, "online", qos: 1, retain: true)
                        guard !reassertPending else { break }
                        reassertPending = true
                        return [(.now + Self.reassertDelay, .reassertAvailability)]
                    }
                    bridgeStates[bridge] = online
                    return feedAll(.bridgeState(bridge, online: online))
                }
                if let level = topics.parseOwner(message.topic), let name = byLevel[level] {
                    return feed(name, .owner(Self.record(message.payloadString)))
                }
                if let level = Self.parseRequest(topics, message.topic), let name = byLevel[level],
                   let (bridge, rssi) = Self.request(message.payloadString) {
                    return feed(name, .handoverRequested(by: bridge, rssi: rssi))
                }

            case .timer(.device(let name, let timer, let token)):
                return feed(name, .timer(timer, token: token))

            case .timer(.reassertAvailability):
                reassertPending = false
                context.requestRepublish(states: false)

            case .event:
                break
            }
            return []
        }
    }

    // MARK: - Payloads

    static func payload(_ record: OwnerRecord) -> String {
        JSONValue.object([("bridge", .string(record.bridge)), ("rssi", .int(record.rssi)),
                          ("since", .int(Int(record.since)))]).serialized
    }

    /// A record another bridge published; nil for an empty (cleared) or unreadable one, which counts as no owner.
    static func record(_ payload: String) -> OwnerRecord? {
        guard !payload.isEmpty, let json = try? JSONValue.parse(payload),
              let bridge = json["bridge"]?.stringValue, !bridge.isEmpty else { return nil }
        let rssi = json["rssi"]?.intValue ?? OwnershipMachine.unknownRSSI
        return OwnerRecord(bridge: bridge, rssi: min(max(rssi, -127), 20), since: Int64(json["since"]?.intValue ?? 0))
    }

    static func request(_ payload: String) -> (String, Int)? {
        guard let json = try? JSONValue.parse(payload), let bridge = json["bridge"]?.stringValue, !bridge.isEmpty,
              let rssi = json["rssi"]?.intValue else { return nil }
        return (bridge, min(max(rssi, -127), 20))
    }

    // MARK: - The request topic: `B/D/owner/request`

    static func requestTopic(_ topics: BridgeTopics, _ device: DeviceConfig) -> String { topics.owner(device) + "/request" }
    static func requestFilter(_ topics: BridgeTopics) -> String { topics.base + "/+/owner/request" }

    static func parseRequest(_ topics: BridgeTopics, _ topic: String) -> String? {
        guard topic.hasPrefix(topics.base + "/") else { return nil }
        let levels = topic.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 3, levels[1] == "owner", levels[2] == "request" else { return nil }
        return String(levels[0])
    }
}
