import Config
import MQTT
import Testing
@testable import BridgeHomeAssistant

/// The bridge reads its own retained configs for a sweep after each connect only (issue 40): subscribed for good,
/// every config it publishes came back into its 1 MiB inbox.
@Suite struct HomeAssistantSweepTests {
    @Test func theConfigFilterIsReadForASweepAfterTheConnectOnly() async throws {
        try await withFeature(HomeAssistantFeature(version: "1", logger: .init(label: "test"))) { host, link in
            var config = testConfig(devices: [])
            config.homeassistant.enabled = true
            host.emit(.configApplied(old: nil, new: config))
            try await eventually("birth topic") { link.filters.withLock { $0 == ["homeassistant/status"] } }
            host.emit(.brokerConnected)
            try await eventually("sweep") {
                link.filters.withLock { Set($0) == ["homeassistant/status", "homeassistant/+/+/+/config"] }
            }
            // A leftover of an earlier run, this bridge's, is cleared while the sweep runs.
            let stale = "homeassistant/sensor/gattbridge_C0FFEE000009/x/config"
            _ = host.route(MQTTMessage(topic: stale, string: #"{"availability":[{"topic":"b/bridge/state"}]}"#,
                                       qos: .atLeastOnce, retain: true))
            try await eventually("cleared") { link.payloads(stale) == [""] }
            try await eventually("sweep over", within: .seconds(20)) {
                link.filters.withLock { $0 == ["homeassistant/status"] }
            }
        }
    }
}
