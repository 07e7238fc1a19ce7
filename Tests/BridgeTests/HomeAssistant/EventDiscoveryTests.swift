import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeHomeAssistant

/// `homeassistant: event` / `device_trigger` (docs/home-assistant.md): an event entity plus one device trigger per event type.
@Suite struct EventDiscoveryTests {
    typealias F = DiscoveryFixtures

    static let address = "C0:FF:EE:00:00:05"
    static let node = "gattbridge_C0FFEE000005"

    static func buttonConfig(_ component: HomeAssistantComponent = .event, name: String = "button",
                             values: [(key: String, value: String)] = [("press", "01"), ("double_press", "02")]) throws -> BridgeConfig {
        F.config([F.device("remote", address, [try F.channel(name, .hex, values: values, component: component)])])
    }

    @Test(arguments: [HomeAssistantComponent.event, .deviceTrigger])
    func bothSpellingsAnnounceAnEventEntityAndOneTriggerPerEventType(_ component: HomeAssistantComponent) throws {
        let messages = HomeAssistantDiscovery(config: try Self.buttonConfig(component), version: "1.0").messages()
        #expect(Set(messages.map(\.topic)) == [
            "homeassistant/event/\(Self.node)/button/config",
            "homeassistant/device_automation/\(Self.node)/button_press/config",
            "homeassistant/device_automation/\(Self.node)/button_double_press/config",
            "homeassistant/sensor/\(Self.node)/rssi/config",
        ])
    }

    @Test func eventEntity() throws {
        let payloads = try F.parsed(HomeAssistantDiscovery(config: try Self.buttonConfig(), version: "1.0").messages())
        let event = try #require(payloads["homeassistant/event/\(Self.node)/button/config"])
        #expect(F.keys(event) == ["name", "unique_id", "state_topic", "event_types", "qos", "availability",
                                  "availability_mode", "device", "origin"])
        #expect(event["name"] == "button")
        #expect(event["unique_id"] == .string("\(Self.node)_button"))
        #expect(event["state_topic"] == "gattbridge/remote/button")
        #expect(event["event_types"] == ["press", "double_press"])
        #expect(event["availability_mode"] == "all")
        #expect(event["availability"]?.arrayValue?.count == 2)
    }

    @Test func triggerFiresForItsOwnEventTypeOnly() throws {
        let payloads = try F.parsed(HomeAssistantDiscovery(config: try Self.buttonConfig(), version: "1.0").messages())
        let event = try #require(payloads["homeassistant/event/\(Self.node)/button/config"])
        let trigger = try #require(payloads["homeassistant/device_automation/\(Self.node)/button_double_press/config"])
        // No name, unique_id or availability: Home Assistant's trigger schema has none and would drop them.
        #expect(F.keys(trigger) == ["automation_type", "type", "subtype", "topic", "value_template", "payload", "qos",
                                    "device", "origin"])
        #expect(trigger["automation_type"] == "trigger")
        #expect(trigger["type"] == "action")
        #expect(trigger["subtype"] == "double_press")
        #expect(trigger["topic"] == "gattbridge/remote/button")
        #expect(trigger["value_template"] == "{{ value_json.event_type }}")
        #expect(trigger["payload"] == "double_press")
        // The same device block as the entity's, so the trigger shows up under the same device.
        #expect(trigger["device"] == event["device"])
        #expect(trigger["origin"] == event["origin"])
    }

    @Test func unsafeEventTypesGiveValidObjectIDsAndKeepTheirSubtype() throws {
        let config = try Self.buttonConfig(name: "big button", values: [("long press", "03")])
        let messages = HomeAssistantDiscovery(config: config, version: "1.0").messages()
        let triggers = messages.filter { $0.topic.contains("/device_automation/") }
        #expect(triggers.count == 1)
        let topic = try #require(triggers.first?.topic)
        let object = topic.split(separator: "/")[3]
        #expect(DiscoveryObjectID.isValid(object))
        #expect(object == Substring(DiscoveryObjectID.make("big button") + "_" + DiscoveryObjectID.make("long press")))
        #expect(HomeAssistantDiscovery.isOwnDiscoveryTopic(topic, prefix: "homeassistant"))
        let payload = try JSONValue.parse(try #require(triggers.first?.payload))
        #expect(payload["subtype"] == "long press" && payload["payload"] == "long press")
    }

    @Test func removingTheChannelClearsTheEntityAndEveryTrigger() throws {
        let old = HomeAssistantDiscovery(config: try Self.buttonConfig(), version: "1.0")
        let withoutDevice = HomeAssistantDiscovery(config: F.config([]), version: "1.0")
        #expect(withoutDevice.removedTopics(old: old) == [
            "homeassistant/device_automation/\(Self.node)/button_double_press/config",
            "homeassistant/device_automation/\(Self.node)/button_press/config",
            "homeassistant/event/\(Self.node)/button/config",
            "homeassistant/sensor/\(Self.node)/rssi/config",
        ])
        // Dropping one event type from `values` clears just its trigger.
        let fewer = HomeAssistantDiscovery(config: try Self.buttonConfig(values: [("press", "01")]), version: "1.0")
        #expect(fewer.removedTopics(old: old) == ["homeassistant/device_automation/\(Self.node)/button_double_press/config"])
        #expect(old.configTopics().contains("homeassistant/device_automation/\(Self.node)/button_press/config"))
        // Left over from an earlier run: a trigger of a channel no longer configured is stale.
        let stale = "homeassistant/device_automation/\(Self.node)/knob_turn/config"
        #expect(old.staleTopics(retained: [stale, "homeassistant/event/\(Self.node)/button/config"]) == [stale])
    }

    @Test func eventPayloadNamesTheEventType() throws {
        let channel = try F.channel("button", .hex, values: [("press", "01"), ("double_press", "02")], component: .event)
        // The codec already maps 01 to "press"; a raw value that is in the map is named as well.
        #expect(HomeAssistantDiscovery.eventPayload(for: channel, decoded: "press") == #"{"event_type":"press"}"#)
        #expect(HomeAssistantDiscovery.eventPayload(for: channel, decoded: "02") == #"{"event_type":"double_press"}"#)
        // A value outside the map is its own event type, JSON-escaped.
        #expect(HomeAssistantDiscovery.eventPayload(for: channel, decoded: "7f") == #"{"event_type":"7f"}"#)
        let text = try F.channel("line", .text, values: [("go", "GO")], component: .deviceTrigger)
        #expect(HomeAssistantDiscovery.eventPayload(for: text, decoded: "say \"hi\"\n")
                == #"{"event_type":"say \"hi\"\n"}"#)
    }
}
