import Codecs
import Config
import Testing
@testable import BridgeHomeAssistant

@Suite struct BridgeDeviceDiscoveryTests {
    func discovery(enabled: Bool = true, host: String = "pi.local", bridgeID: String? = nil) -> BridgeDeviceDiscovery {
        var config = BridgeConfig()
        config.mqtt.baseTopic = "gb"
        config.mqtt.bridgeID = bridgeID
        config.homeassistant.enabled = enabled
        return BridgeDeviceDiscovery(config: config, version: "1.2.3", hostname: host)
    }

    @Test func oneDiagnosticSensorPerCountAndPerAdapter() throws {
        let messages = discovery().messages(adapters: ["hci0", "hci1"])
        #expect(messages.map(\.topic) == [
            "homeassistant/sensor/gattbridge_bridge_pi_local/devices_online/config",
            "homeassistant/sensor/gattbridge_bridge_pi_local/buffered_messages/config",
            "homeassistant/sensor/gattbridge_bridge_pi_local/dropped_messages/config",
            "homeassistant/sensor/gattbridge_bridge_pi_local/adapter_hci0/config",
            "homeassistant/sensor/gattbridge_bridge_pi_local/adapter_hci1/config",
        ])
        let adapter = try JSONValue.parse(messages[3].payload)
        #expect(adapter["state_topic"]?.stringValue == "gb/bridge/adapters")
        #expect(adapter["entity_category"]?.stringValue == "diagnostic")
        #expect(adapter["value_template"]?.stringValue?.contains("'equalto', 'hci0'") == true)
        #expect(adapter["device"]?["name"]?.stringValue == "gattbridge bridge pi.local")
        #expect(adapter["availability"]?.arrayValue?.first?["topic"]?.stringValue == "gb/bridge/state")
        let online = try JSONValue.parse(messages[0].payload)
        #expect(online["state_topic"]?.stringValue == "gb/bridge/diagnostics")
        #expect(online["value_template"]?.stringValue == "{{ value_json.devices_online }}")
        // Unique ids differ across entities and never collide with a device's (gattbridge_<address>_…).
        let ids = try messages.map { try JSONValue.parse($0.payload)["unique_id"]?.stringValue ?? "" }
        #expect(Set(ids).count == ids.count)
        #expect(!HomeAssistantDiscovery.isOwnDiscoveryTopic(messages[0].topic, prefix: "homeassistant"))
    }

    /// Bridges of a fleet may share a host: each is its own device, reading its own per-bridge topics.
    @Test func inAFleetTheBridgeIDNamesTheDeviceAndItsTopics() throws {
        let messages = discovery(bridgeID: "kitchen").messages(adapters: ["hci0"])
        #expect(messages[0].topic == "homeassistant/sensor/gattbridge_bridge_kitchen/devices_online/config")
        let online = try JSONValue.parse(messages[0].payload)
        #expect(online["state_topic"]?.stringValue == "gb/bridge/kitchen/diagnostics")
        #expect(online["availability"]?.arrayValue?.first?["topic"]?.stringValue == "gb/bridge/kitchen/state")
        #expect(online["device"]?["name"]?.stringValue == "gattbridge bridge kitchen")
        let adapter = try JSONValue.parse(messages[3].payload)
        #expect(adapter["state_topic"]?.stringValue == "gb/bridge/kitchen/adapters")
    }

    @Test func nothingWhenHomeAssistantIsDisabled() {
        #expect(discovery(enabled: false).messages(adapters: ["hci0"]).isEmpty)
    }

    @Test func diagnosticsPayload() {
        #expect(BridgeDeviceDiscovery.diagnostics(online: 2, devices: 3, buffered: 10, dropped: 1)
                == #"{"devices_online":2,"devices":3,"buffered":10,"dropped":1}"#)
    }

    /// An unplugged adapter keeps its sensor (showing `absent`): every listed one, or without a list each seen.
    @Test func adapterSensorsOutliveTheirAdapters() {
        #expect(BridgeDeviceFeature.sensorAdapters(known: [], present: ["hci0"], listed: ["hci1", "hci0"]) == ["hci0", "hci1"])
        #expect(BridgeDeviceFeature.sensorAdapters(known: ["hci0", "hci1"], present: ["hci0"], listed: nil) == ["hci0", "hci1"])
        #expect(BridgeDeviceFeature.sensorAdapters(known: ["hci0"], present: ["hci2"], listed: nil) == ["hci0", "hci2"])
    }
}
