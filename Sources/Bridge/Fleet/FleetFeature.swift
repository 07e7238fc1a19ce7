import BridgeFeatureHost
import BridgeModel
import Codecs
import Config
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MQTT

/// Several bridges on one broker (docs/fleet.md): runs one `OwnershipMachine` per device over the retained `B/D/owner`
/// records, every bridge's `B/bridge/<id>/state`, the handover requests on `B/D/owner/request` and this bridge's own
/// sightings, and tells the core which devices this bridge owns. Does nothing unless the config has `bridge:`. The
/// decisions are `FleetMachine`'s; this is the loop that carries them out.
package struct FleetFeature: BridgeFeature {
    package init(logger: Logger) {
        self.logger = logger
    }

    let logger: Logger

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var machine = FleetMachine()
        await runFeatureLoop(events, timer: FleetMachine.Timer.self) { input in
            var timers: [(at: ContinuousClock.Instant, timer: FleetMachine.Timer)] = []
            for effect in machine.handle(input, now: .now, unixNow: Int64(time(nil))) {
                switch effect {
                case .publish(let topic, let payload, let retain): context.publish(topic, payload, qos: 1, retain: retain)
                case .subscribe(let filter, let retained): context.subscribe(filter, retained: retained)
                case .unsubscribe(let filter): context.unsubscribe(filter)
                case .setOwnership(let name, let owned): context.setOwnership(name, owned: owned)
                case .setHeld(let name, let held): context.setHeld(name, held: held)
                case .schedule(let at, let timer): timers.append((at, timer))
                case .republishAvailability: context.requestRepublish(states: false)
                case .notice(let text): logger.notice("\(text)")
                case .info(let text): logger.info("\(text)")
                case .trace(let name, let event, let from, let to, let rssi, let actions):
                    logger.debug("fleet \(name): \(event) in \(from) → \(to) rssi=\(rssi.map(String.init) ?? "none")",
                                 metadata: actions.isEmpty ? [:] : ["actions": "\(actions)"])
                }
            }
            return timers
        }
    }

    // MARK: - Payloads

    static func payload(_ record: OwnerRecord) -> String {
        JSONValue.object([("bridge", .string(record.bridge)), ("rssi", .int(record.rssi)),
                          ("since", .int(Int(record.since)))]).serialized
    }

    /// A record another bridge published; nil for an empty (cleared) or unreadable one, which counts as no owner.
    package static func record(_ payload: String) -> OwnerRecord? {
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
