import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeHomeAssistant
@testable import BridgeModel

@Suite struct HomeAssistantDiscoveryTests {
    typealias F = DiscoveryFixtures

    @Test func demoConfigAnnouncesEveryChannelAndDevice() throws {
        let discovery = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1.2.3")
        let messages = discovery.messages()
        #expect(messages.allSatisfy { $0.retain })
        #expect(Set(messages.map(\.topic)) == [
            "homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config",
            "homeassistant/sensor/gattbridge_C0FFEE000001/battery/config",
            "homeassistant/sensor/gattbridge_C0FFEE000001/rssi/config",
            "homeassistant/sensor/gattbridge_C0FFEE000002/serial/config",
            "homeassistant/text/gattbridge_C0FFEE000002/serial/config",
            "homeassistant/sensor/gattbridge_C0FFEE000002/rssi/config",
            "homeassistant/switch/gattbridge_C0FFEE000003/led/config",
            "homeassistant/sensor/gattbridge_C0FFEE000003/rssi/config",
            // The passive thermometer's RSSI; its readings' entities are the adverts feature's (AdvertEntitiesTests).
            "homeassistant/sensor/gattbridge_A4C1380B7001/rssi/config",
        ])
        #expect(messages.count == 9)
        #expect(discovery.configTopics() == Set(messages.map(\.topic)))
        let payloads = try F.parsed(messages)
        let uniqueIDs = payloads.values.compactMap { $0["unique_id"]?.stringValue }
        #expect(uniqueIDs.count == 9 && Set(uniqueIDs).count == 9)
        for (topic, payload) in payloads {
            for key in ["name", "unique_id", "state_topic", "qos", "availability", "availability_mode", "device", "origin"] {
                #expect(payload[key] != nil, "\(topic) lacks \(key)")
            }
        }
    }

    /// With the web page's public URL (docs/web.md), Home Assistant's device page links to the device's page.
    @Test func aPublicURLGivesEachDeviceItsPage() throws {
        var config = try F.demoConfig()
        #expect(try F.parsed(HomeAssistantDiscovery(config: config, version: "1").messages()).values
            .allSatisfy { $0["device"]?["configuration_url"] == nil })
        config.web.publicURL = PublicURL.parse("https://pi.example:8443/gb/")
        let payloads = try F.parsed(HomeAssistantDiscovery(config: config, version: "1").messages())
        let hr = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config"])
        #expect(hr["device"]?["configuration_url"] == "https://pi.example:8443/gb/#/device/heart-rate-strap")
        config.web.enabled = false
        #expect(try F.parsed(HomeAssistantDiscovery(config: config, version: "1").messages()).values
            .allSatisfy { $0["device"]?["configuration_url"] == nil })
    }

    @Test func heartRateIsAMeasurementSensorWithAttributes() throws {
        let payloads = try F.parsed(HomeAssistantDiscovery(config: try F.demoConfig(), version: "1.2.3").messages())
        let hr = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config"])
        #expect(hr["name"] == "heart_rate")
        #expect(hr["unique_id"] == "gattbridge_C0FFEE000001_heart_rate")
        #expect(hr["state_topic"] == "gattbridge/heart-rate-strap/heart_rate")
        #expect(hr["value_template"] == "{{ value_json.bpm }}")
        #expect(hr["json_attributes_topic"] == "gattbridge/heart-rate-strap/heart_rate")
        let attributes = try #require(hr["json_attributes_template"]?.stringValue)
        for field in ["contact", "energy_kj", "rr_ms"] { #expect(attributes.contains("value_json.\(field)")) }
        #expect(hr["unit_of_measurement"] == "bpm")
        #expect(hr["state_class"] == "measurement")
        #expect(hr["icon"] == "mdi:heart-pulse")
        #expect(hr["command_topic"] == nil)
        #expect(hr["qos"] == 1)
        #expect(hr["availability_mode"] == "all")
        #expect(hr["availability"] == [
            ["topic": "gattbridge/bridge/state", "payload_available": "online", "payload_not_available": "offline"],
            ["topic": "gattbridge/heart-rate-strap/availability", "payload_available": "online",
             "payload_not_available": "offline"],
        ])
        #expect(hr["device"] == [
            "identifiers": ["gattbridge_C0FFEE000001"],
            "name": "heart-rate-strap",
            "connections": [["bluetooth", "C0:FF:EE:00:00:01"]],
        ])
        #expect(hr["origin"] == ["name": "gattbridge", "sw_version": "1.2.3"])
    }

    @Test func batteryTextSwitchAndRSSI() throws {
        let payloads = try F.parsed(HomeAssistantDiscovery(config: try F.specExample(), version: "0.1.0").messages())
        let battery = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000001/battery/config"])
        #expect(battery["device_class"] == "battery")
        #expect(battery["unit_of_measurement"] == "%")
        #expect(battery["state_class"] == "measurement")
        #expect(battery["state_topic"] == "gattbridge/chest-strap/battery")

        let serial = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000002/serial/config"])
        #expect(serial["state_topic"] == "gattbridge/hm10/serial")
        #expect(serial["state_class"] == nil && serial["unit_of_measurement"] == nil)
        let text = try #require(payloads["homeassistant/text/gattbridge_C0FFEE000002/serial/config"])
        #expect(text["command_topic"] == "gattbridge/hm10/serial/set")
        #expect(text["state_topic"] == "gattbridge/hm10/serial")
        #expect(text["max"] == 255)
        #expect(text["unique_id"] == "gattbridge_C0FFEE000002_serial_text")

        let led = try #require(payloads["homeassistant/switch/gattbridge_C0FFEE000003/led/config"])
        #expect(led["command_topic"] == "gattbridge/desk-led/led/set")
        #expect(led["state_topic"] == "gattbridge/desk-led/led")
        #expect(led["payload_on"] == "ON" && led["payload_off"] == "OFF")
        #expect(led["state_on"] == "ON" && led["state_off"] == "OFF")

        let rssi = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000003/rssi/config"])
        #expect(rssi["state_topic"] == "gattbridge/desk-led/rssi")
        #expect(rssi["device_class"] == "signal_strength")
        #expect(rssi["unit_of_measurement"] == "dBm")
        #expect(rssi["entity_category"] == "diagnostic")
        #expect(rssi["state_class"] == "measurement")
        #expect(rssi["device"]?["identifiers"] == ["gattbridge_C0FFEE000003"])
    }

    @Test func lightUsesTheBasicSchemaWithoutStateKeys() throws {
        let led = try F.channel("lamp", .uint8, values: [("off", "0"), ("on", "1")], writable: true, component: .light)
        let config = F.config([F.device("desk", "AA:BB:CC:DD:EE:01", [led])])
        let payloads = try F.parsed(HomeAssistantDiscovery(config: config, version: "1").messages())
        let light = try #require(payloads["homeassistant/light/gattbridge_AABBCCDDEE01/lamp/config"])
        #expect(light["schema"] == "basic")
        #expect(light["payload_on"] == "on" && light["payload_off"] == "off")
        #expect(light["state_on"] == nil && light["state_off"] == nil)
        #expect(light["command_topic"] == "gattbridge/desk/lamp/set")
    }

    @Test func codecsChooseTheEntity() throws {
        let channels = [
            try F.channel("temp", .int16, qos: 0),
            try F.channel("mode", .uint8, values: [("ECO", "1"), ("BOOST", "2"), ("OFF", "0")]),
            try F.channel("door", .bool),
            try F.channel("raw", .base64),
            try F.channel("blob", .hex, writable: true),
            try F.channel("contact", .uint8, component: .binarySensor),
        ]
        let config = F.config([F.device("thing", "AA:BB:CC:DD:EE:02", channels)])
        let payloads = try F.parsed(HomeAssistantDiscovery(config: config, version: "1").messages())
        func at(_ component: String, _ object: String) -> JSONValue? {
            payloads["homeassistant/\(component)/gattbridge_AABBCCDDEE02/\(object)/config"]
        }
        #expect(at("sensor", "temp")?["state_class"] == "measurement")
        #expect(at("sensor", "temp")?["qos"] == 0)
        // Its payloads include "ECO", which a measurement sensor would reject.
        #expect(at("sensor", "mode") != nil && at("sensor", "mode")?["state_class"] == nil)
        #expect(at("binary_sensor", "door")?["payload_on"] == "true")
        #expect(at("binary_sensor", "door")?["payload_off"] == "false")
        #expect(F.keys(at("sensor", "raw")).contains("state_topic") && at("sensor", "raw")?["state_class"] == nil)
        #expect(at("sensor", "blob") != nil && at("text", "blob") == nil)
        #expect(at("binary_sensor", "contact")?["payload_on"] == "1")
        #expect(payloads.count == channels.count + 1)
    }

    @Test func topicOverrideAndUnsafeNamesGiveValidObjectIDs() throws {
        let channels = [
            try F.channel("heart rate", .uint8),
            try F.channel("heart.rate", .uint8),
            try F.channel("temperature", .int16, topic: "temp"),
        ]
        let config = F.config([F.device("My Device", "AA:BB:CC:DD:EE:03", channels)], prefix: "ha/discovery", base: "home/ble")
        let discovery = HomeAssistantDiscovery(config: config, version: "1")
        let topics = discovery.configTopics()
        #expect(topics.count == 4)
        #expect(topics.allSatisfy { HomeAssistantDiscovery.isOwnDiscoveryTopic($0, prefix: "ha/discovery") })
        #expect(topics.contains("ha/discovery/sensor/gattbridge_AABBCCDDEE03/temp/config"))
        let payloads = try F.parsed(discovery.messages())
        let temp = try #require(payloads["ha/discovery/sensor/gattbridge_AABBCCDDEE03/temp/config"])
        #expect(temp["name"] == "temperature")
        #expect(temp["state_topic"] == "home/ble/My Device/temp")
        #expect(temp["availability"]?[0]?["topic"] == "home/ble/bridge/state")
        #expect(temp["availability"]?[1]?["topic"] == "home/ble/My Device/availability")
    }

    @Test func deviceIdentityAndSupportURLFillTheBlocks() throws {
        let discovery = HomeAssistantDiscovery(config: try F.demoConfig(), version: "2.0",
                                               supportURL: "https://example.org/gattbridge")
        let identity = DeviceIdentity(model: "HRM-Pro", manufacturer: "Acme")
        let payloads = try F.parsed(discovery.messages(deviceInfo: ["heart-rate-strap": identity]))
        let hr = try #require(payloads["homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config"])
        #expect(hr["device"]?["model"] == "HRM-Pro")
        #expect(hr["device"]?["manufacturer"] == "Acme")
        #expect(hr["origin"]?["support_url"] == "https://example.org/gattbridge")
        let led = try #require(payloads["homeassistant/switch/gattbridge_C0FFEE000003/led/config"])
        #expect(led["device"]?["model"] == nil && led["device"]?["manufacturer"] == nil)

        let strap = try #require(discovery.config.devices.first)
        let one = discovery.messages(for: strap, identity: identity)
        #expect(one.count == 3)
        #expect(one == discovery.messages(deviceInfo: ["heart-rate-strap": identity]).filter { $0.topic.contains("C0FFEE000001") })
    }

    @Test func disabledPublishesNothing() throws {
        var config = try F.demoConfig()
        config.homeassistant.enabled = false
        let discovery = HomeAssistantDiscovery(config: config, version: "1")
        #expect(discovery.messages().isEmpty)
        #expect(discovery.messages(for: config.devices[0], identity: nil).isEmpty)
        #expect(discovery.configTopics().isEmpty)
        #expect(discovery.staleTopics(retained: ["homeassistant/sensor/gattbridge_C0FFEE000001/battery/config"]).isEmpty)
        #expect(discovery.removedTopics(old: HomeAssistantDiscovery(config: try F.demoConfig(), version: "1")).isEmpty)
    }

    @Test func messagesAreStable() throws {
        let a = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1").messages()
        let b = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1").messages()
        #expect(a == b)
    }
}
