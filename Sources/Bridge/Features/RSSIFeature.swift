import Config

/// `B/D/rssi`: the signal strength BlueZ last reported for the device, retained; again after a broker reconnect,
/// cleared when the device leaves the config.
struct RSSIFeature: BridgeFeature {
    func run(_ events: AsyncStream<CoreEvent>, _ context: FeatureContext) async {
        var last: [String: (topic: String, rssi: Int)] = [:]
        var topics = BridgeTopics(base: "")
        for await event in events {
            switch event {
            case .configApplied(_, let config):
                topics = BridgeTopics(base: config.mqtt.baseTopic)
            case .rssi(let device, let rssi):
                let topic = topics.rssi(device)
                last[device.name] = (topic, rssi)
                context.publish(topic, String(rssi), qos: 0, retain: true)
            case .brokerConnected:
                for (topic, rssi) in last.values { context.publish(topic, String(rssi), qos: 1, retain: true) }
            case .deviceRemoved(let device, let oldTopics):
                last[device.name] = nil
                context.publish(oldTopics.rssi(device), "", qos: 1, retain: true)
            default:
                break
            }
        }
    }
}
