import Adverts
import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeFeatures
@testable import BridgeHomeAssistant
@testable import BridgeModel
@testable import BridgeSession

@Suite struct DeviceTopicFeatureTests {
    let lamp = DeviceConfig(name: "lamp", address: BluetoothAddress("C0:FF:EE:00:00:03")!, channels: [])

    @Test func availabilityIsRetainedRepublishedAfterAReconnectAndClearedOnRemoval() async throws {
        try await withFeature(DeviceTopicFeature.availability) { host, link in
            host.emit(.configApplied(old: nil, new: testConfig(devices: [lamp])))
            host.emit(.availability(lamp, online: false))
            host.emit(.availability(lamp, online: true))
            host.emit(.rssi(lamp, -60))                               // not this feature's topic
            host.emit(.brokerConnected)                               // the first: QoS 1 was buffered, no repeat
            host.emit(.brokerDisconnected)
            host.emit(.brokerConnected)                               // a reconnect: the broker may have lost it
            host.emit(.deviceRemoved(lamp, topics: BridgeTopics(base: "b")))
            try await eventually("cleared") { link.payloads("b/lamp/availability").last == "" }
            #expect(link.payloads("b/lamp/availability") == ["offline", "online", "online", ""])
            #expect(link.published.withLock { $0.allSatisfy(\.retain) })
            #expect(link.payloads("b/lamp/rssi").isEmpty)
        }
    }

    /// A passive device's availability is the adverts feature's to publish; it reaches this feature only as the
    /// core's event for the others. Said here too, every change was published twice. Its topic is cleared all the same.
    @Test func aPassiveDevicesAvailabilityIsLeftToTheAdvertsFeature() async throws {
        let thermo = DeviceConfig(name: "thermo", address: BluetoothAddress("A4:C1:38:1A:2B:3C")!, channels: [],
                                  advert: .format(.bthome))
        try await withFeature(DeviceTopicFeature.availability) { host, link in
            host.emit(.configApplied(old: nil, new: testConfig(devices: [lamp, thermo])))
            host.emit(.availability(thermo, online: true))
            host.emit(.availability(lamp, online: true))
            host.emit(.deviceRemoved(thermo, topics: BridgeTopics(base: "b")))
            try await eventually("cleared") { link.payloads("b/thermo/availability") == [""] }
            #expect(link.payloads("b/lamp/availability") == ["online"])
        }
    }

    /// Fleet: after a reconnect an owned device is held until its owner knows the device is still its own. Then its
    /// availability is said again; a hold that ends in a release (another bridge took the device while this one was
    /// cut off) says nothing, so the new owner's `online` stands.
    @Test func aHeldDeviceIsSaidAgainOnlyIfStillOwned() async throws {
        let fridge = DeviceConfig(name: "fridge", address: BluetoothAddress("C0:FF:EE:00:00:04")!, channels: [])
        try await withFeature(DeviceTopicFeature.availability) { host, link in
            var config = testConfig(devices: [lamp, fridge])
            config.fleet = FleetSettings(id: "a", handoverAfter: .seconds(30))
            host.emit(.configApplied(old: nil, new: config))
            host.emit(.brokerConnected)
            host.emit(.availability(lamp, online: true))
            host.emit(.availability(fridge, online: true))
            host.emit(.brokerDisconnected)
            host.emit(.brokerConnected)                               // nothing said before the hold is decided
            host.emit(.held(lamp, true))
            host.emit(.held(fridge, true))
            host.emit(.held(lamp, false))                             // still ours: said again
            host.emit(.ownership(fridge, owned: false))               // taken meanwhile: released silently
            host.emit(.availability(fridge, online: false))
            host.emit(.deviceRemoved(lamp, topics: BridgeTopics(base: "b")))
            try await eventually("lamp cleared") { link.payloads("b/lamp/availability").last == "" }
            #expect(link.payloads("b/lamp/availability") == ["online", "online", ""])
            #expect(link.payloads("b/fridge/availability") == ["online"])
        }
    }

    @Test func rssiFollowsTheBaseTopicOfTheConfigApplied() async throws {
        try await withFeature(DeviceTopicFeature.rssi) { host, link in
            host.emit(.configApplied(old: nil, new: testConfig(base: "one", devices: [lamp])))
            host.emit(.rssi(lamp, -70))
            host.emit(.configApplied(old: nil, new: testConfig(base: "two", devices: [lamp])))
            host.emit(.rssi(lamp, -65))
            try await eventually("published") { link.payloads("two/lamp/rssi") == ["-65"] }
            #expect(link.payloads("one/lamp/rssi") == ["-70"])
        }
    }
}

@Suite struct EventLogFeatureTests {
    @Test func aBurstOfRejectionsIsCutToTenAndOneSummary() async throws {
        try await withFeature(EventLogFeature(logger: .init(label: "test"))) { host, link in
            host.emit(.configApplied(old: nil, new: testConfig()))
            for i in 0..<25 {
                host.emit(.rejected(CommandRejection(topic: "b/d/c/set", reason: "bad \(i)\nFORGED",
                                                     payload: Array("x\u{1}".utf8))))
            }
            try await eventually("summary") { link.payloads("b/bridge/log").contains { $0.contains("suppressed") } }
            let logs = link.payloads("b/bridge/log")
            #expect(logs.count == 11)
            #expect(logs.last?.contains("\"suppressed\":15") == true)
            #expect(logs.allSatisfy { !$0.contains("\n") })
            #expect(logs.first?.contains("bad 0\\\\nFORGED (payload \\\"x\\\\x01\\\")") == true, "\(logs[0])")
        }
    }
}

@Suite struct DropReportTests {
    @Test func lossesAreReportedOnceConnectedNeverIntoAFullBuffer() async throws {
        try await withFeature(EventLogFeature(logger: .init(label: "test"))) { host, link in
            host.emit(.configApplied(old: nil, new: testConfig()))
            host.emit(.messagesDropped(MQTTDropReport(reason: .bufferFull, count: 3, total: 3)))
            host.emit(.messagesDropped(MQTTDropReport(reason: .bufferFull, count: 2, total: 5)))
            host.emit(.deviceEvent(DeviceConfig(name: "d", address: BluetoothAddress("C0:FF:EE:00:00:01")!, channels: []),
                                   .connected))
            try await eventually("event published") { !link.payloads("b/bridge/event").isEmpty }
            #expect(link.payloads("b/bridge/log").isEmpty, "not while the broker is away")
            host.emit(.brokerConnected)
            try await eventually("reported") { !link.payloads("b/bridge/log").isEmpty }
            #expect(link.payloads("b/bridge/log") == [
                #"{"level":"error","message":"5 MQTT messages lost: the offline buffer was full (oldest dropped first)","dropped":5,"reason":"buffer_full"}"#])
        }
    }
}

@Suite struct HomeAssistantStaleConfigTests {
    func message(_ topic: String, base: String, retain: Bool = true) -> MQTTMessageStub {
        MQTTMessageStub(topic: topic, base: base, retain: retain)
    }

    @Test func onlyRetainedConfigsNamingThisBridgesStateAreStale() throws {
        let discovery = HomeAssistantDiscovery(config: { var c = testConfig(base: "gb"); c.homeassistant.enabled = true; return c }(),
                                               version: "test")
        let topic = "homeassistant/sensor/gattbridge_c0ffee000009/old/config"
        let own = message(topic, base: "gb").message
        let otherBridge = message(topic, base: "other").message
        let live = message(topic, base: "gb", retain: false).message
        #expect(HomeAssistantFeature.isStaleOwnConfig(own, discovery: discovery, announced: []))
        #expect(!HomeAssistantFeature.isStaleOwnConfig(own, discovery: discovery, announced: [topic]))
        #expect(!HomeAssistantFeature.isStaleOwnConfig(otherBridge, discovery: discovery, announced: []))
        #expect(!HomeAssistantFeature.isStaleOwnConfig(live, discovery: discovery, announced: []))
    }
}

import MQTT

struct MQTTMessageStub {
    let message: MQTTMessage
    init(topic: String, base: String, retain: Bool) {
        let payload = #"{"name":"x","availability":[{"topic":"\#(base)/bridge/state"}]}"#
        message = MQTTMessage(topic: topic, string: payload, retain: retain)
    }
}
