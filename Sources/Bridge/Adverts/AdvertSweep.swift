import BridgeHomeAssistant
import Config
import MQTT

/// The passive half's start-up sweep (docs/adverts.md): after a connect, or a reload that changes what Home
/// Assistant's discovery reads, the retained broadcaster configs (and, outside a fleet, every `B/+/availability`)
/// are read for `window`, and what an earlier run's auto devices left is cleared as it arrives. Pure: it says what
/// to subscribe, unsubscribe and clear; `AdvertFeature` does it.
///
/// Invariants:
/// - subscriptions last one window: every filter `start` subscribes is unsubscribed by the `end` of its number, or
///   by the next `start`;
/// - a topic is cleared at most once, and at most `AdvertLeftoverSweep.limit` auto devices' levels are read.
struct AdvertSweep: Sendable {
    enum Effect: Sendable, Equatable {
        case subscribe(String)
        case unsubscribe(String)
        /// Publish an empty retained message on the topic; `note` is the log line that says why, if any.
        case clear(String, note: String?)
        /// Feed `end(number)` once the window is over.
        case endAfter(Duration, number: Int)
    }

    /// How long the retained broadcaster configs are read after a connect: the broker sends them right after the
    /// SUBSCRIBE, so a few seconds is plenty, and subscribing for longer would bring every config this bridge
    /// publishes back into its own inbox (issue 40: with a flood of entities, most of the inbound load).
    static let window: Duration = HomeAssistantDiscovery.sweepWindow

    private(set) var filters: [String] = []
    private(set) var number = 0
    /// Auto devices of an earlier run found by the sweep: their `B/<name>/+` is read while it lasts.
    private var staleLevels: Set<String> = []
    private var leftovers = AdvertLeftoverSweep()

    var isRunning: Bool { !filters.isEmpty }

    /// Starts a sweep (ending one that runs): the configs `discovery` reads, and outside a fleet the availability of
    /// every device under `base`.
    mutating func start(discovery: HomeAssistantDiscovery?, base: String, fleet: Bool) -> [Effect] {
        var out = filters.map(Effect.unsubscribe)
        filters = (discovery?.advertConfigFilters ?? []) + (fleet ? [] : ["\(base)/+/availability"])
        staleLevels = []
        guard !filters.isEmpty else { return out }
        out += filters.map(Effect.subscribe)
        number += 1
        out.append(.endAfter(Self.window, number: number))
        return out
    }

    /// The window of sweep `number` is over: its subscriptions go (a later sweep's stay).
    mutating func end(_ number: Int) -> [Effect] {
        guard number == self.number else { return [] }
        defer { filters = [] }
        return filters.map(Effect.unsubscribe)
    }

    /// A message on the sweep's filters. `devices` are the running config's, `tracks` says whether an auto device
    /// of that level is tracked now, `published` whether this run published the topic itself. A Home Assistant
    /// config that arrives just after the window is still judged: it was sent for the sweep.
    mutating func heard(_ message: MQTTMessage, base: String, devices: [DeviceConfig], tracks: (String) -> Bool,
                        discovery: HomeAssistantDiscovery?, published: (String) -> Bool) -> [Effect] {
        if isRunning, message.retain, !message.payload.isEmpty,
           let (level, leaf) = AdvertFeature.autoLeftover(message.topic, base: base, devices: devices), !tracks(level) {
            // Without Home Assistant nothing else finds an earlier run's auto devices: their availability names
            // them, and their own topics are read for the rest of the sweep and cleared.
            var out: [Effect] = []
            if leaf == "availability", !staleLevels.contains(level), staleLevels.count < AdvertLeftoverSweep.limit {
                staleLevels.insert(level)
                let filter = "\(base)/\(level)/+"
                filters.append(filter)
                out.append(.subscribe(filter))
            }
            if staleLevels.contains(level), leftovers.clearOnce(message.topic) {
                out.append(.clear(message.topic, note: "clearing \(message.topic), left by an auto device of an earlier run"))
            }
            return out
        }
        guard let discovery, let leftover = discovery.advertLeftover(message), !published(message.topic) else { return [] }
        var out = leftovers.admit(leftover, topic: message.topic).map {
            Effect.clear($0, note: "clearing stale Home Assistant config \($0)")
        }
        if case .stale = leftover {
            for topic in discovery.advertStateTopics(message) where leftovers.clearOnce(topic) {
                out.append(.clear(topic, note: nil))
            }
        }
        return out
    }
}
