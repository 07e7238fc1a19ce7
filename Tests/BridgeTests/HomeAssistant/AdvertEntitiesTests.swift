import Bluetooth
import Codecs
import Config
import Testing
@testable import Bridge

/// Home Assistant entities of broadcasters (docs/adverts.md).
@Suite struct AdvertEntitiesTests {
    typealias F = DiscoveryFixtures
    static let node = "gattbridge_A4C1381A2B3C_advert"

    func discovery(enabled: Bool = true, fleet: Bool = false) -> (HomeAssistantDiscovery, DeviceConfig) {
        let device = AdvertFixtures.passive()
        var config = F.config([device], enabled: enabled, base: "b")
        if fleet { config.fleet = FleetSettings(id: "a", handoverAfter: .seconds(30)) }
        return (HomeAssistantDiscovery(config: config, version: "1"), device)
    }

    func payloads(_ entity: AdvertEntity, fleet: Bool = false) throws -> [String: JSONValue] {
        let (discovery, device) = discovery(fleet: fleet)
        return try F.parsed(discovery.advertMessages(for: device, entity: entity))
    }

    @Test func aReadingIsAMeasurementSensorWithItsDeviceClassAndUnit() throws {
        let payloads = try payloads(.measurement(name: "temperature", unit: "°C", kind: .number))
        let sensor = try #require(payloads["homeassistant/sensor/\(Self.node)/temperature/config"])
        #expect(F.keys(sensor) == ["name", "unique_id", "state_topic", "device_class", "unit_of_measurement",
                                   "state_class", "qos", "availability", "availability_mode", "device", "origin"])
        #expect(sensor["name"] == "Temperature")
        #expect(sensor["unique_id"] == .string("\(Self.node)_temperature"))
        #expect(sensor["state_topic"] == "b/thermo/temperature")
        #expect(sensor["device_class"] == "temperature" && sensor["unit_of_measurement"] == "°C")
        #expect(sensor["state_class"] == "measurement")
        // The device's own Home Assistant device, the one its RSSI sensor and channels belong to.
        #expect(sensor["device"]?["identifiers"] == ["gattbridge_A4C1381A2B3C"])
        #expect(sensor["availability"]?.arrayValue?.compactMap { $0["topic"]?.stringValue }
            == ["b/bridge/state", "b/thermo/availability"])
    }

    @Test(arguments: [
        ("humidity", "%", "humidity"), ("battery", "%", "battery"), ("voltage", "V", "voltage"),
        ("pressure", "mbar", "pressure"), ("illuminance", "lx", "illuminance"), ("moisture", "%", "moisture"),
        ("conductivity", "µS/cm", "conductivity"), ("carbon_dioxide", "ppm", "carbon_dioxide"),
        ("pm25", "µg/m³", "pm25"), ("temperature_2", "°C", "temperature"), ("mass", "kg", "weight"),
        ("tx_power", "dBm", "signal_strength"),
    ])
    func deviceClasses(_ name: String, _ unit: String, _ deviceClass: String) throws {
        let payloads = try payloads(.measurement(name: name, unit: unit, kind: .number))
        let sensor = try #require(payloads.values.first)
        #expect(sensor["device_class"] == .string(deviceClass))
        #expect(sensor["unit_of_measurement"] == .string(unit))
    }

    @Test func unknownReadingsKeepTheDecodersUnitAndNoClass() throws {
        let sensor = try #require(try payloads(.measurement(name: "rotation", unit: "°", kind: .number)).values.first)
        #expect(sensor["device_class"] == nil && sensor["unit_of_measurement"] == "°")
        let count = try #require(try payloads(.measurement(name: "count", unit: nil, kind: .number)).values.first)
        #expect(count["unit_of_measurement"] == nil && count["state_class"] == "measurement")
        let energy = try #require(try payloads(.measurement(name: "energy", unit: "kWh", kind: .number)).values.first)
        #expect(energy["state_class"] == "total_increasing")
    }

    @Test func binaryReadings() throws {
        let payloads = try payloads(.measurement(name: "opening", unit: nil, kind: .binary))
        let sensor = try #require(payloads["homeassistant/binary_sensor/\(Self.node)/opening/config"])
        #expect(sensor["payload_on"] == "ON" && sensor["payload_off"] == "OFF")
        #expect(sensor["device_class"] == "opening")
        let low = try #require(try self.payloads(.measurement(name: "battery_binary", unit: nil, kind: .binary)).values.first)
        #expect(low["device_class"] == "battery")
        let generic = try #require(try self.payloads(.measurement(name: "generic", unit: nil, kind: .binary)).values.first)
        #expect(generic["device_class"] == nil)
    }

    @Test func textReadingsAreCutToWhatHomeAssistantTakes() throws {
        let text = try #require(try payloads(.measurement(name: "raw", unit: nil, kind: .text)).values.first)
        #expect(text["value_template"] == "{{ value[:255] }}" && text["state_class"] == nil)
        let stamp = try #require(try payloads(.measurement(name: "timestamp", unit: nil, kind: .text)).values.first)
        #expect(stamp["device_class"] == "timestamp")
    }

    @Test func eventsAreEventEntitiesWithDeviceTriggers() throws {
        let payloads = try payloads(.event(name: "button", types: ["press", "long_press"]))
        #expect(Set(payloads.keys) == [
            "homeassistant/event/\(Self.node)/button/config",
            "homeassistant/device_automation/\(Self.node)/button_press/config",
            "homeassistant/device_automation/\(Self.node)/button_long_press/config",
        ])
        let event = try #require(payloads["homeassistant/event/\(Self.node)/button/config"])
        #expect(event["event_types"] == ["press", "long_press"] && event["state_topic"] == "b/thermo/button")
        let trigger = try #require(payloads["homeassistant/device_automation/\(Self.node)/button_long_press/config"])
        #expect(trigger["subtype"] == "long_press" && trigger["topic"] == "b/thermo/button")
        #expect(trigger["availability"] == nil && trigger["unique_id"] == nil)
    }

    @Test func aBeaconsPresenceIsAwayRatherThanUnavailable() throws {
        let tracker = try #require(try payloads(.presence)["homeassistant/device_tracker/\(Self.node)/presence/config"])
        #expect(tracker["payload_home"] == "home" && tracker["payload_not_home"] == "not_home")
        #expect(tracker["availability"] == nil && tracker["availability_topic"] == "b/bridge/state")
        let inFleet = try #require(try payloads(.presence, fleet: true).values.first)
        #expect(inFleet["availability_topic"] == nil && inFleet["availability"] == nil)
    }

    @Test func nothingWhenDisabledAndNeverTakenForALeftover() throws {
        let (off, device) = discovery(enabled: false)
        #expect(off.advertMessages(for: device, entity: .presence).isEmpty)
        let (on, _) = discovery()
        for message in on.advertMessages(for: device, entity: .event(name: "button", types: ["press"])) {
            #expect(!HomeAssistantDiscovery.isOwnDiscoveryTopic(message.topic, prefix: "homeassistant"))
        }
        #expect(on.advertConfigTopics(of: device, entity: .measurement(name: "x", unit: nil, kind: .number))
            == ["homeassistant/sensor/\(Self.node)/x/config"])
    }
}
