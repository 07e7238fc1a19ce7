import BridgeFeatureHost
import BridgeModel
import Config

/// A retained per-device topic kept current from one kind of core event: published on every change, again when the
/// broker reconnects (it may have lost retained messages), cleared when the device leaves the config. Availability
/// and RSSI are two of these.
package struct DeviceTopicFeature: BridgeFeature {
    /// The topic of `device` under `topics`.
    let topic: @Sendable (BridgeTopics, DeviceConfig) -> String
    /// The device and payload an event carries for this topic, if any.
    let value: @Sendable (CoreEvent) -> (DeviceConfig, String)?
    /// QoS of change publishes (republishes after a reconnect always use 1).
    var qos = 1

    /// `B/D/availability` (docs/mqtt.md): `online`/`offline`. A passive device's is the adverts feature's to publish
    /// (it says it through the core only so the device list and the fleet hear it): published here too, every change
    /// went out twice. Its topic is still cleared here when it leaves the config.
    package static let availability = DeviceTopicFeature(topic: { $0.availability($1) }, value: { event in
        guard case .availability(let device, let online) = event, !device.isPassive else { return nil }
        return (device, online ? "online" : "offline")
    })

    /// `B/D/rssi`: the signal strength BlueZ last reported (QoS 0: a newer reading soon replaces a lost one).
    package static let rssi = DeviceTopicFeature(topic: { $0.rssi($1) }, value: { event in
        guard case .rssi(let device, let rssi) = event else { return nil }
        return (device, String(rssi))
    }, qos: 0)

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var last: [String: (topic: String, payload: String)] = [:]
        var topics = BridgeTopics(base: "")
        var connectedBefore = false
        var fleet = false
        // Fleet: owned devices whose owner is not sure yet that it still owns them (`CoreEvent.held`).
        var held: Set<String> = []
        for await event in events {
            switch event {
            case .configApplied(_, let config):
                topics = BridgeTopics(base: config.mqtt.baseTopic)
                fleet = config.fleet != nil
            case .brokerConnected:
                // The first connect delivers what QoS 1 buffered meanwhile; sending it again would only repeat it.
                // A reconnect may follow a broker restart that lost retained messages; QoS 0 was never buffered.
                // In a fleet an owned device is held after every connect, and said again when the hold ends: a
                // bridge cut off meanwhile may have lost it to another, whose word must stand.
                if (connectedBefore || qos == 0) && !fleet {
                    for (topic, payload) in last.values { context.publish(topic, payload, qos: 1, retain: true) }
                }
                connectedBefore = true
            case .held(let device, let isHeld):
                if isHeld {
                    held.insert(device.name)
                } else if held.remove(device.name) != nil, let (topic, payload) = last[device.name] {
                    context.publish(topic, payload, qos: 1, retain: true)
                }
            case .ownership(let device, let owned):
                if owned {
                    held.remove(device.name)
                } else if held.contains(device.name) {
                    last[device.name] = nil          // released silently: the new owner's word stands
                }
            case .released(let device):
                // Fleet: given up; its topics are the next owner's to keep (a reconnect must not replay ours).
                last[device.name] = nil
            case .deviceRemoved(let device, let oldTopics):
                last[device.name] = nil
                context.publish(topic(oldTopics, device), "", qos: 1, retain: true)
            default:
                guard let (device, payload) = value(event) else { break }
                let topic = topic(topics, device)
                if held.contains(device.name) {
                    // Said when the hold ends, if the device is still ours; a silent release drops it.
                    if last[device.name] != nil || payload != "offline" { last[device.name] = (topic, payload) }
                    break
                }
                last[device.name] = (topic, payload)
                context.publish(topic, payload, qos: qos, retain: true)
            }
        }
    }
}
