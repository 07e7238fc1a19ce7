import BridgeModel
import Codecs
import Config

/// Home Assistant entities of what broadcasters report (docs/adverts.md): a `sensor` per reading, a
/// `binary_sensor` per binary reading, an `event` entity with device triggers per event, a `device_tracker` for a
/// beacon's presence. Device classes and units follow Home Assistant's own bthome and xiaomi_ble integrations.
///
/// They join the device's Home Assistant device (same `device` block, availability and origin as its channels), under
/// their own node `gattbridge_<ADDRESS>_advert`: which readings a broadcaster has is learnt from its broadcasts, not
/// from the config, so these configs are not the config's, and the sweep of leftovers that `HomeAssistantFeature`
/// runs on `gattbridge_<ADDRESS>` (whatever the config does not name is stale) must not see them.
enum AdvertEntities {
    /// Home Assistant refuses a state longer than this (`MAX_LENGTH_STATE_STATE`).
    static let maxTextLength = ChannelEntities.maxTextLength

    /// The entities of one `AdvertEntity`, before the shared parts are added.
    static func entities(_ entity: AdvertEntity, device: DeviceConfig, topics: BridgeTopics) -> [DiscoveryEntity] {
        let state = "\(topics.base)/\(device.topicLevel)/\(entity.name)"
        let objectID = DiscoveryObjectID.make(entity.name)
        let name = displayName(entity.name)
        switch entity {
        case .presence:
            return [DiscoveryEntity(component: .deviceTracker, objectID: objectID, name: "Presence", fields: [
                ("state_topic", .string(state)), ("payload_home", "home"), ("payload_not_home", "not_home"),
                ("source_type", "bluetooth_le"),
            ], qos: 1)]
        case .event(let eventName, let types):
            return ChannelEntities.events(name: displayName(eventName), eventTypes: types, state: state,
                                          objectID: objectID, qos: 1)
        case .measurement(let reading, _, .binary):
            var fields: [(String, JSONValue)] = [("state_topic", .string(state)), ("payload_on", "ON"),
                                                 ("payload_off", "OFF")]
            if let deviceClass = binaryClass(reading) { fields.append(("device_class", .string(deviceClass))) }
            return [DiscoveryEntity(component: .binarySensor, objectID: objectID, name: name, fields: fields, qos: 1)]
        case .measurement(let reading, _, .text):
            var fields: [(String, JSONValue)] = [("state_topic", .string(state))]
            if baseName(reading) == "timestamp" {
                fields.append(("device_class", "timestamp"))
            } else {
                fields.append(("value_template", .string("{{ value[:\(maxTextLength)] }}")))
            }
            return [DiscoveryEntity(component: .sensor, objectID: objectID, name: name, fields: fields, qos: 1)]
        case .measurement(let reading, let unit, .number):
            var fields: [(String, JSONValue)] = [("state_topic", .string(state))]
            let base = baseName(reading)
            if let deviceClass = sensorClass(base, unit: unit) { fields.append(("device_class", .string(deviceClass))) }
            if let unit { fields.append(("unit_of_measurement", .string(unit))) }
            fields.append(("state_class", .string(totals.contains(base) ? "total_increasing" : "measurement")))
            if base == "tx_power" { fields.append(("entity_category", "diagnostic")) }
            return [DiscoveryEntity(component: .sensor, objectID: objectID, name: name, fields: fields, qos: 1)]
        }
    }

    /// `temperature_2` → `temperature`, `battery_binary` → `battery`: numbered and marked names keep their kind.
    static func baseName(_ name: String) -> String {
        var base = Substring(name)
        if let underscore = base.lastIndex(of: "_"), base.index(after: underscore) != base.endIndex,
           base[base.index(after: underscore)...].allSatisfy({ $0.isASCII && $0.isNumber }) {
            base = base[..<underscore]
        }
        if base.hasSuffix("_binary") { base = base.dropLast("_binary".count) }
        return String(base)
    }

    /// `dew_point_2` → `Dew point 2`.
    static func displayName(_ name: String) -> String {
        let spaced = String(name.map { $0 == "_" ? " " : $0 })
        return spaced.prefix(1).uppercased() + spaced.dropFirst()
    }

    /// Sensor device classes by reading name, as bthome and xiaomi_ble map them; nil where Home Assistant has none
    /// (counts, rotation, UV index, formaldehyde…).
    static func sensorClass(_ name: String, unit: String?) -> String? {
        switch name {
        case "temperature", "dew_point": "temperature"
        case "humidity": "humidity"
        case "battery": unit == "%" ? "battery" : nil
        case "voltage": "voltage"
        case "current": "current"
        case "power": "power"
        case "energy": "energy"
        case "pressure": "pressure"
        case "illuminance": "illuminance"
        case "moisture": "moisture"
        case "conductivity": "conductivity"
        case "carbon_dioxide": "carbon_dioxide"
        case "volatile_organic_compounds": "volatile_organic_compounds"
        case "pm25": "pm25"
        case "pm10": "pm10"
        case "mass": "weight"
        case "distance": "distance"
        case "duration": "duration"
        case "speed": "speed"
        case "gas": "gas"
        case "water": "water"
        case "volume": "volume"
        case "volume_storage": "volume_storage"
        case "volume_flow_rate": "volume_flow_rate"
        case "precipitation": "precipitation"
        case "tx_power", "signal_strength", "rssi": "signal_strength"
        default: nil
        }
    }

    /// Meters that only count up: Home Assistant wants `total_increasing` for them.
    static let totals: Set<String> = ["energy", "gas", "water", "volume", "precipitation"]

    /// Binary sensor device classes by name (Home Assistant's `BinarySensorDeviceClass`); a binary `battery` means
    /// low battery there too.
    static func binaryClass(_ name: String) -> String? {
        switch baseName(name) {
        case "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas",
             "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power",
             "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "vibration", "window":
            baseName(name)
        case "bottom_submersion": "moisture"
        case "device_forcibly_removed": "tamper"
        case "door_left_open": "problem"
        default: nil
        }
    }
}

extension HomeAssistantDiscovery {
    /// The configs of one entity a broadcaster of `device` reported; empty when Home Assistant support is off.
    public func advertMessages(for device: DeviceConfig, entity: AdvertEntity) -> [DiscoveryMessage] {
        guard isEnabled else { return [] }
        let shared = sharedFields(device, identity: nil)
        return AdvertEntities.entities(entity, device: device, topics: topics).map { part in
            var members: [(String, JSONValue)] = []
            if part.component != .deviceAutomation {
                members += [("name", .string(part.name)),
                            ("unique_id", .string("\(advertNodeID(device))_\(part.objectID)"))]
            }
            members += part.fields
            var tail = shared(part)
            if part.component == .deviceTracker {
                // Away is a state of its own here, not "unavailable": only the bridge's own state may hide it.
                tail = tail.filter { $0.0 != "availability" && $0.0 != "availability_mode" }
                if config.fleet == nil {
                    tail.insert(("availability_topic", .string(topics.bridgeState)), at: 1)
                }
            }
            members += tail
            return DiscoveryMessage(topic: advertTopic(device, part), payload: JSONValue.object(members).serialized)
        }
    }

    /// The config topics of `entity` (to clear them when the device leaves).
    public func advertConfigTopics(of device: DeviceConfig, entity: AdvertEntity) -> [String] {
        guard isEnabled else { return [] }
        return AdvertEntities.entities(entity, device: device, topics: topics).map { advertTopic(device, $0) }
    }

    func advertNodeID(_ device: DeviceConfig) -> String { nodeID(device) + "_advert" }

    private func advertTopic(_ device: DeviceConfig, _ entity: DiscoveryEntity) -> String {
        "\(discoveryPrefix)/\(entity.component.rawValue)/\(advertNodeID(device))/\(entity.objectID)/config"
    }
}
