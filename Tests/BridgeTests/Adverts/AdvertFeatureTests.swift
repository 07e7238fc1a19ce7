import Adverts
import Bluetooth
import Codecs
import Config
import MQTT
import Synchronization
import Testing
@testable import BridgeAdverts
@testable import BridgeFeatureHost
@testable import BridgeModel

/// The core as `AdvertFeature` sees it: records the auto devices it is asked to add.
final class RecordingCore: DeviceManaging {
    let added = Mutex<[DeviceConfig]>([])
    let removed = Mutex<[String]>([])
    let refuse: Bool

    init(refuse: Bool = false) { self.refuse = refuse }

    func currentConfig() async -> BridgeConfig { testConfig() }

    var state: BridgeState { BridgeState() }

    func updateDevices(_ change: DeviceChange) async -> Result<DeviceConfig, DeviceChangeError>? {
        if case .remove(let name) = change {
            removed.withLock { $0.append(name) }
            return .failure(.unknownDevice(name))
        }
        guard case .add(let device) = change else { return nil }
        added.withLock { $0.append(device) }
        return refuse ? .failure(.nameTaken(device.name)) : .success(device)
    }

    func submit(_ message: MQTTMessage) {}

    func latestValues(of device: String) -> [(channel: String, payload: String)]? { nil }
}

@Suite struct AdvertFeatureTests {
    typealias F = AdvertFixtures

    func config(_ devices: [DeviceConfig], settings: AdvertSettings = AdvertFixtures.settings(),
                homeAssistant: Bool = true) -> BridgeConfig {
        var config = testConfig(devices: devices)
        config.homeassistant.enabled = homeAssistant
        config.adverts = settings
        return config
    }

    func run(_ core: RecordingCore = RecordingCore(),
             _ body: (FeatureHost, RecordingLink) async throws -> Void) async throws {
        try await withFeature(AdvertFeature(version: "1", logger: .init(label: "test"))) { host, link in
            host.core.set(core)
            try await body(host, link)
        }
    }

    static let temperatureConfig = "homeassistant/sensor/gattbridge_A4C1381A2B3C_advert/temperature/config"

    @Test func readingsAvailabilityRSSIAndEntitiesAndTheirClearing() async throws {
        let device = F.passive()
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([device])))
            host.emit(.brokerConnected)
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("readings") { link.payloads("b/thermo/humidity") == ["50"] }
            let messages = link.published.withLock { $0 }
            #expect(messages.first { $0.topic == "b/thermo/temperature" }.map { ($0.payloadString, $0.retain) }! == ("21.5", true))
            #expect(link.payloads("b/thermo/availability") == ["online"])
            #expect(messages.first { $0.topic == "b/thermo/rssi" }?.qos == .atMostOnce)
            #expect(link.payloads(Self.temperatureConfig).count == 1)
            // The device leaves: what was published for it is cleared.
            host.emit(.deviceRemoved(device, topics: BridgeTopics(base: "b")))
            try await eventually("cleared") { link.payloads("b/thermo/temperature") == ["21.5", ""] }
            #expect(link.payloads(Self.temperatureConfig).last == "")
            #expect(link.payloads("b/thermo/humidity").last == "")
        }
    }

    @Test func eventsAreNotRetained() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()])))
            host.emit(.broadcast(F.heard(F.bthome("00013a04"))))
            try await eventually("event") { !link.payloads("b/thermo/button").isEmpty }
            let event = link.published.withLock { $0.first { $0.topic == "b/thermo/button" } }!
            #expect(event.payloadString == #"{"event_type":"long_press"}"# && !event.retain)
        }
    }

    /// Home Assistant subscribes to an entity's topic only after its config arrived, and events are not retained:
    /// the events of an event entity announced just now wait (a second), in order, while readings go on; once the
    /// entity is known, events go at once.
    @Test func theFirstEventsOfANewEventEntityWaitForHomeAssistant() async throws {
        let button = "b/thermo/button", temperature = "b/thermo/temperature"
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()])))
            host.emit(.broadcast(F.heard(F.bthome("00013a01"))))
            host.emit(.broadcast(F.heard(F.bthome("00023a02"))))
            host.emit(.broadcast(F.heard(F.reading(id: 3))))
            try await eventually("events") { link.payloads(button).count == 2 }
            #expect(link.payloads(button) == [#"{"event_type":"press"}"#, #"{"event_type":"double_press"}"#])
            let topics = link.published.withLock { $0.map(\.topic) }
            let entity = try #require(topics.firstIndex(of: "homeassistant/event/gattbridge_A4C1381A2B3C_advert/button/config"))
            let reading = try #require(topics.firstIndex(of: temperature))
            #expect(entity < reading && reading < topics.firstIndex(of: button)!)
            // Known now: the next press goes at once, before the reading heard after it.
            host.emit(.broadcast(F.heard(F.bthome("00043a04"))))
            host.emit(.broadcast(F.heard(F.reading(id: 5, centidegrees: 2200))))
            try await eventually("reading") { link.payloads(temperature).count == 2 }
            let later = link.published.withLock { $0.map(\.topic) }
            #expect(later.lastIndex(of: button)! < later.lastIndex(of: temperature)!)
            #expect(link.payloads(button).last == #"{"event_type":"long_press"}"#)
        }
    }

    /// Without Home Assistant nothing waits.
    @Test func eventsGoAtOnceWithoutHomeAssistant() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()], homeAssistant: false)))
            host.emit(.broadcast(F.heard(F.bthome("00013a01"))))
            host.emit(.broadcast(F.heard(F.reading(id: 3))))
            try await eventually("reading") { !link.payloads("b/thermo/temperature").isEmpty }
            let topics = link.published.withLock { $0.map(\.topic) }
            #expect(topics.firstIndex(of: "b/thermo/button")! < topics.firstIndex(of: "b/thermo/temperature")!)
        }
    }

    @Test func anAutoDeviceIsAddedToTheRunningConfig() async throws {
        let core = RecordingCore()
        try await run(core) { host, link in
            host.emit(.configApplied(old: nil, new: config([], settings: F.settings(auto: [.bthome]))))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("added") { !core.added.withLock { $0.isEmpty } }
            #expect(core.added.withLock { $0.map(\.name) } == ["bthome-a4c1381a2b3c"])
            try await eventually("published") { link.payloads("b/bthome-a4c1381a2b3c/temperature") == ["21.5"] }
        }
    }

    @Test func aRefusedAutoDeviceIsAskedForOnce() async throws {
        let core = RecordingCore(refuse: true)
        let saved = F.passive("saved", BluetoothAddress("A4:C1:38:00:00:09")!)
        try await run(core) { host, link in
            host.emit(.configApplied(old: nil, new: config([saved], settings: F.settings(auto: [.bthome]))))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            host.emit(.broadcast(F.heard(F.reading(id: 2, centidegrees: 2000))))
            // Events are handled in order: once the saved device's reading is out, both broadcasts were.
            host.emit(.broadcast(F.heard(F.reading(id: 1), from: saved.address)))
            try await eventually("saved device") { !link.payloads("b/saved/temperature").isEmpty }
            #expect(core.added.withLock { $0.count } == 1)
            // Its name may be another device's: nothing was published under it.
            #expect(!link.published.withLock { $0.contains { $0.topic.contains("bthome-a4c1381a2b3c") } })
        }
    }

    /// Before issue 40 an auto device only went offline, and kept its slot and its retained topics for good.
    @Test func aSilentAutoDeviceLeavesTheConfig() async throws {
        let core = RecordingCore()
        try await run(core) { host, link in
            let settings = F.settings(auto: [.bthome], timeout: .milliseconds(200))
            host.emit(.configApplied(old: nil, new: config([], settings: settings)))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("added") { core.added.withLock { $0.count } == 1 }
            let device = core.added.withLock { $0[0] }
            host.emit(.configApplied(old: config([], settings: settings), new: config([device], settings: settings)))
            try await eventually("removed") { core.removed.withLock { $0 } == [device.name] }
        }
    }

    @Test func aSilentDeviceGoesOffline() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()], settings: F.settings(timeout: .milliseconds(200)))))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("offline") { link.payloads("b/thermo/availability") == ["online", "offline"] }
        }
    }

    /// The expiry timer is re-armed from the tracker only when none is armed, which holds while the timeout stays:
    /// a reload that shortens it must bring the armed deadline forward, or the device would stay online for the old
    /// timeout (an hour here).
    @Test func aShorterTimeoutOnReloadTakesEffect() async throws {
        try await run { host, link in
            let long = config([F.passive()], settings: F.settings(timeout: .seconds(3600)))
            host.emit(.configApplied(old: nil, new: long))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("online") { link.payloads("b/thermo/availability") == ["online"] }
            host.emit(.configApplied(old: long, new: config([F.passive()], settings: F.settings(timeout: .milliseconds(200)))))
            try await eventually("offline") { link.payloads("b/thermo/availability") == ["online", "offline"] }
        }
    }

    @Test func anUndecryptableDeviceIsReportedOnTheBridgeLog() async throws {
        let sealed = try #require(BTHomeDecoder.encrypt(objects: [0x01, 0x50], address: F.thermo, bindkey: F.key, counter: 5))
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()])))
            host.emit(.broadcast(F.heard(sealed)))
            host.emit(.broadcast(F.heard(try #require(BTHomeDecoder.encrypt(objects: [0x01, 0x51], address: F.thermo,
                                                                              bindkey: F.key, counter: 6)))))
            try await eventually("error") { !link.payloads("b/bridge/log").isEmpty }
            let report = try JSONValue.parse(link.payloads("b/bridge/log")[0])
            #expect(report["level"] == "error" && report["device"] == "thermo")
            #expect(report["message"]?.stringValue?.contains("no bindkey") == true)
            #expect(!link.payloads("b/bridge/log")[0].contains("231d39"))
            #expect(link.payloads("b/thermo/battery").isEmpty)
        }
    }

    @Test func homeAssistantsBirthAndABrokerReconnectRepublish() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()])))
            host.emit(.brokerConnected)
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("first") { link.payloads("b/thermo/temperature").count == 1 }
            try await eventually("subscribed") { link.filters.withLock { $0.contains("homeassistant/status") } }
            #expect(host.route(MQTTMessage(topic: "homeassistant/status", string: "online", qos: .atMostOnce, retain: false)))
            try await eventually("configs again") { link.payloads(Self.temperatureConfig).count == 2 }
            #expect(link.payloads("b/thermo/temperature").count == 1)
            host.emit(.brokerDisconnected)
            host.emit(.brokerConnected)
            try await eventually("states again") { link.payloads("b/thermo/temperature").count == 2 }
            #expect(link.payloads("b/thermo/availability") == ["online", "online"])
            #expect(link.payloads(Self.temperatureConfig).count == 3)
        }
    }

    @Test func aNewDiscoveryPrefixMovesTheConfigs() async throws {
        try await run { host, link in
            let first = config([F.passive()])
            host.emit(.configApplied(old: nil, new: first))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("config") { link.payloads(Self.temperatureConfig).count == 1 }
            var moved = first
            moved.homeassistant.discoveryPrefix = "ha"
            host.emit(.configApplied(old: first, new: moved))
            try await eventually("moved") {
                link.payloads("ha/sensor/gattbridge_A4C1381A2B3C_advert/temperature/config").count == 1
            }
            #expect(link.payloads(Self.temperatureConfig) == [link.payloads(Self.temperatureConfig)[0], ""])
            #expect(link.filters.withLock { $0 }.allSatisfy { $0.hasPrefix("ha/") })
        }
    }

    /// The configs are read for the start-up sweep only: subscribed for good, every config the bridge published came
    /// back into its own inbox (issue 40). An auto device's leftover goes too, with its reading, availability and RSSI.
    @Test func leftoversOfAnEarlierRunAreClearedInASweepAfterTheConnect() async throws {
        let gone = "homeassistant/sensor/gattbridge_A4C1381A2B3D_advert/temperature/config"
        let goneTrigger = "homeassistant/device_automation/gattbridge_A4C1381A2B3D_advert/button_press/config"
        let live = "homeassistant/sensor/gattbridge_A4C1381A2B3C_advert/humidity/config"
        let own = #"{"availability":[{"topic":"b/bridge/state"}],"device":{"name":"old"}}"#
        let ghost = "homeassistant/sensor/gattbridge_A4C138000009_advert/temperature/config"
        let ghostConfig = #"{"availability":[{"topic":"b/bridge/state"}],"device":{"name":"bthome-a4c138000009"},"#
            + #""state_topic":"b/bthome-a4c138000009/temperature"}"#
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()])))
            try await eventually("birth topic") { link.filters.withLock { $0.count == 1 } }
            host.emit(.brokerConnected)
            try await eventually("subscribed") { link.filters.withLock { $0.count == 7 } }
            func retained(_ topic: String, _ payload: String) {
                _ = host.route(MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: true))
            }
            retained(goneTrigger, #"{"automation_type":"trigger","device":{"name":"old"}}"#)
            retained(live, own)
            retained(gone, own)
            retained(ghost, ghostConfig)
            try await eventually("cleared") { link.payloads(goneTrigger) == [""] && link.payloads(gone) == [""] }
            try await eventually("ghost cleared") {
                link.payloads(ghost) == [""] && link.payloads("b/bthome-a4c138000009/temperature") == [""]
                    && link.payloads("b/bthome-a4c138000009/availability") == [""]
            }
            #expect(link.payloads(live).isEmpty)
            try await eventually("sweep over", within: .seconds(20)) { link.filters.withLock { $0.count == 1 } }
        }
    }

    /// Without Home Assistant there are no configs to find them by: an auto device of an earlier run is found by
    /// its retained availability, and its own topics are read and cleared for the rest of the sweep (issue 40).
    @Test func autoLeftoversAreClearedWithoutHomeAssistant() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()], homeAssistant: false)))
            host.emit(.brokerConnected)
            try await eventually("subscribed") { link.filters.withLock { $0 == ["b/+/availability"] } }
            func retained(_ topic: String, _ payload: String) {
                _ = host.route(MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: true))
            }
            retained("b/thermo/availability", "online")                 // a configured device's
            retained("b/kitchen-a4c138000001/availability", "online")   // not an auto device's name
            retained("b/bthome-a4c138000009/availability", "offline")
            try await eventually("its topics read") {
                link.filters.withLock { $0.contains("b/bthome-a4c138000009/+") }
            }
            retained("b/bthome-a4c138000009/availability", "offline")
            retained("b/bthome-a4c138000009/temperature", "21.5")
            retained("b/bthome-a4c138000009/rssi", "-60")
            try await eventually("cleared") {
                link.payloads("b/bthome-a4c138000009/temperature") == [""]
                    && link.payloads("b/bthome-a4c138000009/rssi") == [""]
                    && link.payloads("b/bthome-a4c138000009/availability") == [""]
            }
            #expect(link.payloads("b/thermo/availability").isEmpty)
            #expect(link.payloads("b/kitchen-a4c138000001/availability").isEmpty)
            try await eventually("sweep over", within: .seconds(20)) { link.filters.withLock { $0.isEmpty } }
        }
    }

    @Test func nothingForHomeAssistantWhenItIsDisabled() async throws {
        try await run { host, link in
            host.emit(.configApplied(old: nil, new: config([F.passive()], homeAssistant: false)))
            host.emit(.broadcast(F.heard(F.reading(id: 1))))
            try await eventually("reading") { !link.payloads("b/thermo/temperature").isEmpty }
            #expect(!link.published.withLock { $0.contains { $0.topic.hasPrefix("homeassistant/") } })
            #expect(link.filters.withLock { $0.isEmpty })
        }
    }
}
