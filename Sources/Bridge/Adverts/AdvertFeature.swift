import Adverts
import BridgeFeatureHost
import BridgeHomeAssistant
import BridgeModel
import Codecs
import Config
import Logging

/// The passive half of the bridge as a feature (docs/adverts.md): feeds `AdvertTracker` from the core's events and
/// performs what it returns: readings, events, availability and RSSI of broadcasters, their Home Assistant
/// entities, `B/bridge/log` errors for broadcasts that cannot be decrypted or whose counter went back, and auto devices
/// added to the running config. Clears the retained topics it published for a device that leaves the config. Keeps
/// the replay ledger in `state_dir` (`ReplayLedgerFile`): loaded at start, saved when a mark moves.
public struct AdvertFeature: BridgeFeature {
    let version: String
    let logger: Logger
    /// What the bounds turned away, for the bridge API's `health`.
    let counts: AdvertCounts

    public var wantsBroadcasts: Bool { true }

    public init(version: String, logger: Logger, counts: AdvertCounts = AdvertCounts()) {
        self.version = version
        self.logger = logger
        self.counts = counts
    }

    private enum Timer: Sendable {
        /// `AdvertTracker.nextDeadline`, as armed.
        case expire(ContinuousClock.Instant)
        case homeAssistantBirth
        /// The events held back on this topic (`delayed`) are due.
        case delayedEvents(String)
        /// The start-up sweep with this number is over: its subscriptions go.
        case sweepEnd(Int)
    }

    public func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var tracker = AdvertTracker()
        var topics = BridgeTopics(base: "")
        var discovery: HomeAssistantDiscovery?
        var connectedBefore = false
        var birth = HomeAssistantBirth()
        var armed: ContinuousClock.Instant?
        /// The retained topics published per device (readings, Home Assistant configs), to clear when it leaves.
        var retained: [String: Set<String>] = [:]
        var sweep = AdvertSweep()
        var sweepTimers: [(at: ContinuousClock.Instant, timer: Timer)] = []
        /// Home Assistant subscribes to an entity's topic only once its config has arrived (a tenth of a second
        /// later), and an event is not retained, to be said again: a button's first press, which is what makes its
        /// event entity known, would be lost there. So the events of an event entity announced just now are held
        /// back by the delay of the republish after a new config, and published in order then (topic → payloads).
        var delayed: [String: [String]] = [:]
        /// Topics newly held back: their timers are armed after the input (`rearm`).
        var newlyDelayed: [String] = []
        /// Whether a sweep ran since the broker connected: a reload that turns discovery on runs one.
        var connected = false
        /// The running config's devices and whether it is a fleet's: the sweep of auto devices' leftovers spares
        /// configured devices, and a fleet's leftovers may be another bridge's.
        var devices: [DeviceConfig] = []
        var fleet = false
        /// Where the replay ledger is saved; nil until the first config (which loads it).
        var stateDir: String?
        /// A failed save is logged once, until one succeeds again.
        var saveFailing = false

        func saveLedger() {
            guard let stateDir else { return }
            do throws(DropInStore.Failure) {
                try ReplayLedgerFile.save(tracker.ledger, stateDir: stateDir)
                saveFailing = false
            } catch {
                if !saveFailing {
                    logger.error("encryption counters not saved (a restart would forget them): \(error)")
                    context.publish(topics.bridgeLog, Self.report(level: "error", device: nil,
                        message: "encryption counters not saved (a restart would forget them): \(error)"), qos: 1)
                }
                saveFailing = true
            }
        }

        func perform(_ actions: [AdvertAction]) async {
            /// Auto devices the core refused: nothing is published under their name (it may be another device's).
            var refused: Set<String> = []
            /// The event entities whose configs this batch published.
            var announced: Set<String> = []
            var countersChanged = false
            defer { if countersChanged { saveLedger() } }
            for action in actions where !refused.contains(action.device.name) {
                switch action {
                case .measurement(let device, let name, let payload):
                    let topic = Self.topic(topics, device, name)
                    context.publish(topic, payload, qos: 1, retain: true)
                    context.recordReading(device: device.name, name: name, payload: payload)
                    retained[device.name, default: []].insert(topic)
                case .event(let device, let name, let payload):
                    let topic = Self.topic(topics, device, name)
                    if delayed[topic] != nil || announced.contains(topic) {
                        if delayed[topic] == nil { newlyDelayed.append(topic) }
                        delayed[topic, default: []].append(payload)
                    } else {
                        context.publish(topic, payload, qos: 1, retain: false)
                    }
                case .availability(let device, let online):
                    context.publish(topics.availability(device), online ? "online" : "offline", qos: 1, retain: true)
                    context.setAvailability(device.name, online: online)
                case .rssi(let device, let rssi):
                    // QoS 0 as for connected devices: a newer reading soon replaces a lost one.
                    context.publish(topics.rssi(device), String(rssi), qos: 0, retain: true)
                case .error(let device, let reason):
                    logger.warning("broadcasts cannot be read: \(reason)", metadata: ["device": "\(device.name)"])
                    context.publish(topics.bridgeLog, Self.errorReport(device: device.name, reason: reason), qos: 1)
                case .counterWentBack(let device, let counter, let mark):
                    let message = "encryption counter \(counter) is below \(mark), the highest accepted: not believed "
                        + "(a replay, or a device that counts from zero again: re-arm it with device/rearm)"
                    logger.warning("\(message)", metadata: ["device": "\(device.name)"])
                    context.publish(topics.bridgeLog, Self.report(level: "warning", device: device.name,
                                                                  message: "\(device.name): \(message)"), qos: 1)
                case .countersChanged:
                    countersChanged = true
                case .readingsDropped(let device, let reason):
                    let message = "\(device.name): readings dropped (\(reason)); counted, not reported again"
                    logger.warning("\(message)", metadata: ["device": "\(device.name)"])
                    context.publish(topics.bridgeLog, Self.report(level: "warning", device: device.name,
                                                                  message: message), qos: 1)
                case .autoTableFull(let device, let limit):
                    let message = "adverts.auto_limit (\(limit)) reached: new broadcasters such as \(device.name) are "
                        + "ignored until an auto device leaves (silent for adverts.timeout, or device/remove)"
                    logger.warning("\(message)")
                    context.publish(topics.bridgeLog, Self.report(level: "warning", device: nil, message: message),
                                    qos: 1)
                case .removeAutoDevice(let device):
                    if case .success? = await context.updateDevices(.remove(name: device.name)) {
                        logger.notice("broadcaster \(device.name) silent: no longer tracked")
                    }
                case .addAutoDevice(let device):
                    if await !add(device) { refused.insert(device.name) }
                case .discovery(let device, let entity):
                    guard let discovery else { break }
                    for message in discovery.advertMessages(for: device, entity: entity) {
                        context.publish(message.topic, message.payload, qos: 1, retain: true)
                        retained[device.name, default: []].insert(message.topic)
                    }
                    if case .event = entity { announced.insert(Self.topic(topics, device, entity.name)) }
                }
            }
        }

        /// False when the core refused the device.
        func add(_ device: DeviceConfig) async -> Bool {
            switch await context.updateDevices(.add(device)) {
            case .success:
                logger.notice("tracking broadcaster \(device.name)", metadata: ["address": "\(device.address)"])
            case .failure(let error):
                logger.warning("broadcaster \(device.address) not added: \(error)")
                tracker.autoRefused(device.address)
                return false
            case nil:
                break
            }
            return true
        }

        func apply(_ effects: [AdvertSweep.Effect]) {
            for effect in effects {
                switch effect {
                case .subscribe(let filter): context.subscribe(filter)
                case .unsubscribe(let filter): context.unsubscribe(filter)
                case .clear(let topic, let note):
                    if let note { logger.info("\(note)") }
                    context.publish(topic, "", qos: 1, retain: true)
                case .endAfter(let delay, let number): sweepTimers.append((ContinuousClock.now + delay, .sweepEnd(number)))
                }
            }
        }

        func startSweep() {
            apply(sweep.start(discovery: discovery, base: topics.base, fleet: fleet))
        }

        func rearm() -> [(at: ContinuousClock.Instant, timer: Timer)] {
            var timers = newlyDelayed.map { (at: ContinuousClock.now + HomeAssistantFeature.stateRepublishDelay,
                                             timer: Timer.delayedEvents($0)) }
            newlyDelayed = []
            timers += sweepTimers
            sweepTimers = []
            // Between configs the earliest deadline only moves later (a broadcast heard now expires after every
            // deadline armed before it), so the tracker, which walks every device for it, is asked only when nothing
            // is armed: asking after every input made each broadcast cost a walk of them all.
            guard armed == nil, let next = tracker.nextDeadline else { return timers }
            armed = next
            timers.append((next, .expire(next)))
            return timers
        }

        await runFeatureLoop(events, timer: Timer.self) { input in
            switch input {
            case .event(.configApplied(let old, let config)):
                topics = BridgeTopics(base: config.mqtt.baseTopic)
                if stateDir == nil {
                    switch ReplayLedgerFile.load(stateDir: config.stateDir) {
                    case .success(let ledger):
                        tracker.restore(ledger)
                    case .failure(let error):
                        logger.error("saved encryption counters not read from \(ReplayLedgerFile.path(stateDir: config.stateDir)): \(error)")
                    }
                }
                stateDir = config.stateDir
                devices = config.devices
                fleet = config.fleet != nil
                let previous = discovery
                let next = HomeAssistantDiscovery(config: config, version: version)
                discovery = next.isEnabled ? next : nil
                if let previous, next.isEnabled, previous.discoveryPrefix != next.discoveryPrefix {
                    // The configs move: those under the old prefix are cleared (they come again under the new one).
                    for (name, topics) in retained {
                        let moved = topics.filter { $0.hasPrefix(previous.discoveryPrefix + "/") }
                        for topic in moved.sorted() { context.publish(topic, "", qos: 1, retain: true) }
                        retained[name] = topics.subtracting(moved)
                    }
                }
                let oldFilters = Self.filters(previous), newFilters = Self.filters(discovery)
                if oldFilters != newFilters {
                    for filter in oldFilters { context.unsubscribe(filter) }
                    for filter in newFilters { context.subscribe(filter) }
                    if connected { startSweep() }
                }
                // A device that left without `deviceRemoved` (another bridge owned it) left its topics to its owner.
                let names = Set(config.devices.map(\.name))
                retained = retained.filter { names.contains($0.key) }
                await perform(tracker.configure(settings: config.adverts, devices: config.devices,
                                                fleet: config.fleet != nil))
                armed = nil     // a shorter timeout may bring the earliest deadline forward
                // Every topic a config names may have moved: say it all again where it now belongs.
                if let old, old.mqtt != config.mqtt || old.homeassistant != config.homeassistant || old.fleet != config.fleet {
                    await perform(tracker.republish(discovery: true, states: old.mqtt.baseTopic != config.mqtt.baseTopic))
                }
            case .event(.broadcast(let heard)):
                await perform(tracker.heard(heard, now: .now))
                counts.update(dropped: tracker.droppedTotal, refused: tracker.refusedTotal)
            case .event(.ownership(let device, let owned)):
                await perform(tracker.ownership(device.name, owned: owned))
            case .event(.held(let device, let held)):
                await perform(tracker.held(device.name, held))
            case .event(.brokerConnected) where !connected:
                connected = true
                startSweep()
                await perform(tracker.republish(discovery: true, states: connectedBefore))
                connectedBefore = true
            case .event(.brokerDisconnected):
                connected = false
            case .event(.brokerConnected):
                // As `DeviceTopicFeature`: the first connect delivers what QoS 1 buffered; a reconnect may follow a
                // broker that lost its retained messages. Unlike a connection, a broadcast heard is a fact whichever
                // bridge owns the device now, so a fleet member says it again too (a held device waits for its hold).
                await perform(tracker.republish(discovery: true, states: connectedBefore))
                connectedBefore = true
            case .event(.message(let message)):
                if let discovery, message.topic == discovery.statusTopic {
                    guard let due = birth.heard(message) else { break }
                    return [(due, .homeAssistantBirth)]
                }
                apply(sweep.heard(message, base: topics.base, devices: devices, tracks: tracker.tracks,
                                  discovery: discovery,
                                  published: { topic in retained.values.contains { $0.contains(topic) } }))
            case .event(.rearm(let device)):
                guard let actions = tracker.rearm(device.name) else { break }
                logger.notice("encryption counters of \(device.name) re-armed: its next counter is believed")
                await perform(actions)
            case .event(.deviceRemoved(let device, _)):
                for topic in (retained.removeValue(forKey: device.name) ?? []).sorted() {
                    context.publish(topic, "", qos: 1, retain: true)
                }
            case .timer(.sweepEnd(let number)):
                apply(sweep.end(number))
            case .timer(.homeAssistantBirth):
                birth.republishing()
                await perform(tracker.announce())
            case .timer(.delayedEvents(let topic)):
                for payload in delayed.removeValue(forKey: topic) ?? [] {
                    context.publish(topic, payload, qos: 1, retain: false)
                }
            case .timer(.expire(let at)):
                if armed == at { armed = nil }
                await perform(tracker.expire(now: .now))
            case .event:
                break
            }
            return rearm()
        }
    }

    /// Home Assistant's birth topic, subscribed while discovery is on (the configs only for a sweep, `startSweep`).
    static func filters(_ discovery: HomeAssistantDiscovery?) -> [String] {
        guard let discovery else { return [] }
        return [discovery.statusTopic]
    }

    /// `B/<level>/<leaf>` where the level is an auto device's name (`<format>-<address without colons, lowercase>`)
    /// that no configured device has: what an auto device of an earlier run may have left.
    static func autoLeftover(_ topic: String, base: String, devices: [DeviceConfig]) -> (level: String, leaf: String)? {
        guard topic.hasPrefix(base + "/") else { return nil }
        let levels = topic.dropFirst(base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 2, !levels[1].isEmpty, let dash = levels[0].lastIndex(of: "-"),
              AdvertFormat(rawValue: String(levels[0][..<dash])) != nil else { return nil }
        let hex = levels[0][levels[0].index(after: dash)...]
        guard hex.count == 12, hex.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) })
        else { return nil }
        let level = String(levels[0])
        guard !devices.contains(where: { $0.topicLevel == level }) else { return nil }
        return (level, String(levels[1]))
    }

    /// `B/D/<name>`: a reading's or an event's topic.
    static func topic(_ topics: BridgeTopics, _ device: DeviceConfig, _ name: String) -> String {
        "\(topics.base)/\(device.topicLevel)/\(name)"
    }

    /// `{"level":"error","message":…,"device":…}` on `B/bridge/log`, as the bridge's other errors.
    static func errorReport(device: String, reason: String) -> String {
        report(level: "error", device: device, message: "\(device): broadcasts cannot be read: \(reason)")
    }

    static func report(level: String, device: String?, message: String) -> String {
        var members: [(String, JSONValue)] = [("level", .string(level)), ("message", .string(message))]
        if let device { members.append(("device", .string(device))) }
        return JSONValue.object(members).serialized
    }
}
