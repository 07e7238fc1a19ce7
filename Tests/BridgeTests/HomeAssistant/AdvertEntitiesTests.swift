import Adverts
import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import BridgeHomeAssistant
@testable import BridgeModel

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

/// Broadcasters' configs left by an earlier run (docs/adverts-mqtt.md).
@Suite struct AdvertLeftoversTests {
    typealias F = DiscoveryFixtures
    static let stranger = BluetoothAddress("A4:C1:38:00:00:01")!

    func discovery(fleet: Bool = false, auto: [AdvertFormat] = []) -> HomeAssistantDiscovery {
        var config = F.config([AdvertFixtures.passive()], base: "b")
        config.adverts = AdvertFixtures.settings(auto: auto)
        if fleet { config.fleet = FleetSettings(id: "a", handoverAfter: .seconds(30)) }
        return HomeAssistantDiscovery(config: config, version: "1")
    }

    func message(_ node: String, _ payload: String, component: String = "sensor", retain: Bool = true) -> MQTTMessage {
        MQTTMessage(topic: "homeassistant/\(component)/\(node)/x/config", string: payload, qos: .atLeastOnce, retain: retain)
    }

    static let own = #"{"availability":[{"topic":"b/bridge/state"}],"device":{"name":"bthome-a4c138000001"}}"#

    @Test func whatIsALeftover() {
        let d = discovery()
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", Self.own)) == .stale(Self.stranger))
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", Self.own, retain: false)) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", "")) == nil)
        // A configured broadcaster's, another bridge's, a connected device's, garbage: not ours to clear.
        #expect(d.advertLeftover(message("gattbridge_A4C1381A2B3C_advert", Self.own)) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert",
                                         #"{"availability":[{"topic":"other/bridge/state"}]}"#)) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C138000001", Self.own)) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", "not json")) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C13800000_advert", Self.own)) == nil)
        // An auto device's is cleared too (it is announced again when next heard); a fleet's leftovers may be another
        // bridge's.
        #expect(discovery(auto: [.bthome]).advertLeftover(message("gattbridge_A4C138000001_advert", Self.own))
            == .stale(Self.stranger))
        #expect(discovery(fleet: true).advertLeftover(message("gattbridge_A4C138000001_advert", Self.own)) == nil)
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", #"{"automation_type":"trigger"}"#,
                                         component: "device_automation")) == .trigger(Self.stranger))
        let tracker = #"{"availability_topic":"b/bridge/state"}"#
        #expect(d.advertLeftover(message("gattbridge_A4C138000001_advert", tracker, component: "device_tracker"))
            == .stale(Self.stranger))
    }

    @Test func aStaleConfigsReadingAvailabilityAndRSSIAreClearedToo() {
        let d = discovery(auto: [.bthome])
        let config = #"{"availability":[{"topic":"b/bridge/state"}],"state_topic":"b/bthome-a4c138000001/temperature"}"#
        #expect(d.advertStateTopics(message("gattbridge_A4C138000001_advert", config)) == [
            "b/bthome-a4c138000001/temperature", "b/bthome-a4c138000001/availability", "b/bthome-a4c138000001/rssi"])
        // Not under the base topic, the bridge's own, a configured device's level: left alone.
        for state in ["other/x/temperature", "b/bridge/state", "b/thermo/temperature", "b/x/y/z"] {
            #expect(d.advertStateTopics(message("n", #"{"state_topic":"\#(state)"}"#)).isEmpty)
        }
    }

    @Test func triggersGoWithTheirDevicesEntitiesWhicheverComesFirst() {
        var sweep = AdvertLeftoverSweep()
        let other = BluetoothAddress("A4:C1:38:00:00:02")!
        #expect(sweep.admit(.trigger(Self.stranger), topic: "t1").isEmpty)
        #expect(sweep.admit(.trigger(other), topic: "t2").isEmpty)
        #expect(sweep.admit(.stale(Self.stranger), topic: "e1") == ["e1", "t1"])
        #expect(sweep.admit(.trigger(Self.stranger), topic: "t3") == ["t3"])
    }
}
