import Bluetooth
import Codecs
import Config
@testable import BridgeHomeAssistant

/// Configs and payload accessors shared by the Home Assistant discovery tests.
enum DiscoveryFixtures {
    static let repoRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)   // Tests/BridgeTests/HomeAssistant/<file>
        return parts.joined(separator: "/")
    }()

    static func demoConfig() throws -> BridgeConfig {
        try ConfigLoader.load(path: repoRoot + "/config/demo.yaml")
    }

    /// The docs/configuration.md example, with the LED's elided characteristic filled in.
    static let specExampleYAML = """
        mqtt:
          host: localhost
          base_topic: gattbridge
        homeassistant:
          enabled: true
          discovery_prefix: homeassistant
        devices:
          - name: chest-strap
            address: "C0:FF:EE:00:00:01"
            channels:
              - name: heart_rate
                characteristic: "2a37"
                codec: heart_rate_measurement
                mode: notify
              - name: battery
                characteristic: "180f/2a19"
                codec: battery_level
                mode: read
                interval: 300
                retain: true
          - name: hm10
            address: "C0:FF:EE:00:00:02"
            channels:
              - name: serial
                characteristic: "ffe0/ffe1"
                codec: text
                writable: true
                write_with_response: false
          - name: desk-led
            address: "C0:FF:EE:00:00:03"
            channels:
              - name: led
                characteristic: "ffe5/ffe9"
                codec: hex
                values: { "ON": "01", "OFF": "00" }
                mode: read
                writable: true
                homeassistant: switch
        """

    static func specExample() throws -> BridgeConfig {
        try ConfigLoader.parse(specExampleYAML, file: "spec-example.yaml")
    }

    static func device(_ name: String, _ address: String, _ channels: [ChannelConfig]) -> DeviceConfig {
        DeviceConfig(name: name, address: BluetoothAddress(address)!, channels: channels)
    }

    static func channel(_ name: String, _ kind: CodecKind, values: [(key: String, value: String)] = [],
                        writable: Bool = false, component: HomeAssistantComponent = .sensor, topic: String? = nil,
                        qos: Int = 1) throws -> ChannelConfig {
        ChannelConfig(name: name, characteristic: BluetoothUUID("ffe1")!, codec: try Codec(kind, values: values),
                      qos: qos, topic: topic, writable: writable, homeassistant: component)
    }

    static func config(_ devices: [DeviceConfig], enabled: Bool = true, prefix: String = "homeassistant",
                       base: String = "gattbridge") -> BridgeConfig {
        BridgeConfig(mqtt: MQTTSettings(baseTopic: base),
                     homeassistant: HomeAssistantSettings(enabled: enabled, discoveryPrefix: prefix), devices: devices)
    }

    /// topic → parsed payload, failing on a payload that is not a JSON object.
    static func parsed(_ messages: [DiscoveryMessage]) throws -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for message in messages {
            let value = try JSONValue.parse(message.payload)
            guard value.objectValue != nil else { throw CodecError("not an object: \(message.payload)") }
            result[message.topic] = value
        }
        return result
    }

    static func keys(_ value: JSONValue?) -> [String] {
        value?.objectValue?.map(\.0) ?? []
    }
}
