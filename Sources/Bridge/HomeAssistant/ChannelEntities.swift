import BridgeModel
import Codecs
import Config

/// Decides how a channel is announced: the configured `homeassistant` component first (switch, light,
/// binary_sensor, event), otherwise by codec, because the codec is what fixes the payload's shape.
enum ChannelEntities {
    /// `MAX_LENGTH_STATE_STATE` in Home Assistant: it refuses longer text values.
    static let maxTextLength = 255

    static func entities(for channel: ChannelConfig, device: DeviceConfig, topics: BridgeTopics) -> [DiscoveryEntity] {
        let objectID = DiscoveryObjectID.make(channel.topicLevel)
        let state = topics.state(device, channel)
        let command = topics.set(device, channel)
        func entity(_ component: DiscoveryEntity.Component, id: String = objectID, _ fields: [(String, JSONValue)]) -> DiscoveryEntity {
            DiscoveryEntity(component: component, objectID: id, name: channel.name, fields: fields, qos: channel.qos)
        }

        switch channel.homeassistant {
        case .switch where channel.writable:
            let payloads = OnOffPayloads.forChannel(values: channel.values, kind: channel.codecKind)
            return [entity(.switch, [
                ("state_topic", .string(state)), ("command_topic", .string(command)),
                ("payload_on", .string(payloads.on)), ("payload_off", .string(payloads.off)),
                ("state_on", .string(payloads.on)), ("state_off", .string(payloads.off)),
            ])]
        case .light where channel.writable:
            // The basic schema compares state payloads with payload_on/payload_off; it has no state_on/state_off.
            let payloads = OnOffPayloads.forChannel(values: channel.values, kind: channel.codecKind)
            return [entity(.light, [
                ("schema", "basic"),
                ("state_topic", .string(state)), ("command_topic", .string(command)),
                ("payload_on", .string(payloads.on)), ("payload_off", .string(payloads.off)),
            ])]
        case .binarySensor, .switch, .light:
            // A switch or light the config did not make writable has nothing to command: show its state only.
            return [binarySensor(channel, state: state, objectID: objectID)]
        case .event, .deviceTrigger:
            return events(channel, state: state, objectID: objectID)
        case .sensor:
            break
        }

        switch channel.codecKind {
        case .heartRateMeasurement:
            return [entity(.sensor, [
                ("state_topic", .string(state)),
                ("value_template", "{{ value_json.bpm }}"),
                ("json_attributes_topic", .string(state)),
                ("json_attributes_template",
                 #"{{ {"contact": value_json.contact, "energy_kj": value_json.energy_kj, "rr_ms": value_json.rr_ms} | tojson }}"#),
                ("unit_of_measurement", "bpm"),
                ("state_class", "measurement"),
                ("icon", "mdi:heart-pulse"),
            ])]
        case .batteryLevel:
            return [entity(.sensor, [
                ("state_topic", .string(state)),
                ("device_class", "battery"),
                ("unit_of_measurement", "%"),
                ("state_class", "measurement"),
            ])]
        case .bool where channel.values.isEmpty || OnOffPayloads.fromValues(channel.values) != nil:
            return [binarySensor(channel, state: state, objectID: objectID)]
        case .uint8, .int8, .uint16, .int16, .uint32, .int32, .uint16be, .int16be, .uint32be, .int32be,
             .float32, .float64, .float32be, .float64be:
            var fields: [(String, JSONValue)] = [("state_topic", .string(state))]
            // A values map publishes its keys ("ON"), which a measurement sensor would reject as non-numeric.
            if channel.values.isEmpty { fields.append(("state_class", "measurement")) }
            return [entity(.sensor, fields)]
        case .text:
            var result = [entity(.sensor, [("state_topic", .string(state))])]
            if channel.writable {
                result.append(entity(.text, [
                    ("state_topic", .string(state)), ("command_topic", .string(command)),
                    ("max", .int(maxTextLength)),
                ]))
            }
            return result
        case .hex, .base64, .bool:
            return [entity(.sensor, [("state_topic", .string(state))])]
        }
    }

    private static func binarySensor(_ channel: ChannelConfig, state: String, objectID: String) -> DiscoveryEntity {
        let payloads = OnOffPayloads.forChannel(values: channel.values, kind: channel.codecKind)
        return DiscoveryEntity(component: .binarySensor, objectID: objectID, name: channel.name, fields: [
            ("state_topic", .string(state)),
            ("payload_on", .string(payloads.on)), ("payload_off", .string(payloads.off)),
        ], qos: channel.qos)
    }

    /// An event entity, which shows the last action in the dashboard and its history, and one device trigger per
    /// event type, which the automation editor offers under the device ("press action"). Both listen to the
    /// channel's state topic, where each action is published as `{"event_type": …}` (`HomeAssistantDiscovery.eventPayload`).
    private static func events(_ channel: ChannelConfig, state: String, objectID: String) -> [DiscoveryEntity] {
        events(name: channel.name, eventTypes: channel.values.map(\.key), state: state, objectID: objectID,
               qos: channel.qos)
    }

    /// The event entity and device triggers of actions published on `state` (event channels, broadcast events).
    static func events(name: String, eventTypes: [String], state: String, objectID: String,
                       qos: Int) -> [DiscoveryEntity] {
        var result = [DiscoveryEntity(component: .event, objectID: objectID, name: name, fields: [
            ("state_topic", .string(state)),
            ("event_types", .array(eventTypes.map { .string($0) })),
        ], qos: qos)]
        for eventType in eventTypes {
            // A trigger matches `payload` against the rendered template: it fires for its own event type only.
            result.append(DiscoveryEntity(component: .deviceAutomation,
                                          objectID: objectID + "_" + DiscoveryObjectID.make(eventType),
                                          name: eventType, fields: [
                ("automation_type", "trigger"),
                ("type", "action"),
                ("subtype", .string(eventType)),
                ("topic", .string(state)),
                ("value_template", "{{ value_json.event_type }}"),
                ("payload", .string(eventType)),
            ], qos: qos))
        }
        return result
    }

    /// The link-quality diagnostic every device gets; the bridge publishes the RSSI in dBm to `B/D/rssi`.
    static func rssi(device: DeviceConfig, topics: BridgeTopics) -> DiscoveryEntity {
        DiscoveryEntity(component: .sensor, objectID: "rssi", name: "RSSI", fields: [
            ("state_topic", .string(topics.rssi(device))),
            ("device_class", "signal_strength"),
            ("unit_of_measurement", "dBm"),
            ("state_class", "measurement"),
            ("entity_category", "diagnostic"),
        ], qos: 1)
    }
}
