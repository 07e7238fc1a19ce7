import Config
import MQTT
import Synchronization
@testable import BridgeFeatureHost
@testable import BridgeModel

/// Runs one feature in process: events go in through `host.emit`, what it publishes lands in `published`.
final class RecordingLink: BrokerLink, Sendable {
    let published = Mutex<[MQTTMessage]>([])
    let filters = Mutex<[String]>([])

    func publish(_ topic: String, _ payload: String, qos: Int, retain: Bool) {
        publish(MQTTMessage(topic: topic, string: payload, qos: MQTTQoS(rawValue: Int32(qos)) ?? .atLeastOnce,
                            retain: retain))
    }

    func publish(_ message: MQTTMessage) { published.withLock { $0.append(message) } }
    func subscribe(_ filter: String, retainHandling: MQTTRetainHandling) { filters.withLock { $0.append(filter) } }
    func unsubscribe(_ filter: String) { filters.withLock { $0.removeAll { $0 == filter } } }

    func payloads(_ topic: String) -> [String] {
        published.withLock { $0.filter { $0.topic == topic }.map(\.payloadString) }
    }
}

/// Runs `feature` until `body` returns, then ends its stream and waits for it.
func withFeature(_ feature: some BridgeFeature, _ body: (FeatureHost, RecordingLink) async throws -> Void) async throws {
    let link = RecordingLink()
    let host = FeatureHost(link: link)
    let (events, context) = host.attach(broadcasts: feature.wantsBroadcasts)
    try await withThrowingDiscardingTaskGroup { group in
        group.addTask { await feature.run(events, context) }
        defer { host.finish() }
        try await body(host, link)
    }
}

func testConfig(base: String = "b", devices: [DeviceConfig] = []) -> BridgeConfig {
    var config = BridgeConfig(mqtt: MQTTSettings(baseTopic: base), devices: devices)
    config.homeassistant.enabled = false
    return config
}
