import BridgeAdapters
import BridgeFeatureHost
import BridgeModel
import Codecs

/// `B/bridge/adapters` (retained, republished when it changes and after a broker reconnect) and the
/// `adapter_recovery` events on `B/bridge/event` (docs/adapters.md).
package struct AdapterFeature: BridgeFeature {
    package init() {}

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var topics: BridgeTopics?
        var adapters: String?
        for await event in events {
            switch event {
            case .configApplied(_, let config):
                let new = BridgeTopics(settings: config.mqtt)
                if let old = topics, old != new {
                    context.publish(AdapterStatus.topic(old), "", qos: 1, retain: true)
                    if let adapters { context.publish(AdapterStatus.topic(new), adapters, qos: 1, retain: true) }
                }
                topics = new
            case .adapters(let statuses, _):
                let text = AdapterStatus.json(statuses).serialized
                guard text != adapters else { break }
                adapters = text
                if let topics { context.publish(AdapterStatus.topic(topics), text, qos: 1, retain: true) }
            case .brokerConnected:
                if let topics, let adapters { context.publish(AdapterStatus.topic(topics), adapters, qos: 1, retain: true) }
            case .adapterRecovery(let adapter, let step, let ok):
                guard let topics else { break }
                context.publish(topics.bridgeEvent, Self.recoveryJSON(adapter: adapter, step: step, ok: ok), qos: 1)
            default:
                break
            }
        }
    }

    static func recoveryJSON(adapter: String, step: String, ok: Bool) -> String {
        JSONValue.object([
            ("type", .string("adapter_recovery")),
            ("adapter", .string(adapter)),
            ("step", .string(step)),
            ("result", .string(ok ? "ok" : "failed")),
        ]).serialized
    }
}
