import Config

/// `B/D/availability` (SPEC §4): retained `online`/`offline` on every change, again when the broker reconnects (it
/// may have lost retained messages), cleared when a device leaves the config.
struct AvailabilityFeature: BridgeFeature {
    func run(_ events: AsyncStream<CoreEvent>, _ context: FeatureContext) async {
        var last: [String: (topic: String, online: Bool)] = [:]
        var topics = BridgeTopics(base: "")
        for await event in events {
            switch event {
            case .configApplied(_, let config):
                topics = BridgeTopics(base: config.mqtt.baseTopic)
            case .availability(let device, let online):
                let topic = topics.availability(device)
                last[device.name] = (topic, online)
                context.publish(topic, online ? "online" : "offline", qos: 1, retain: true)
            case .brokerConnected:
                for (topic, online) in last.values { context.publish(topic, online ? "online" : "offline", qos: 1, retain: true) }
            case .deviceRemoved(let device, let oldTopics):
                last[device.name] = nil
                context.publish(oldTopics.availability(device), "", qos: 1, retain: true)
            default:
                break
            }
        }
    }
}
