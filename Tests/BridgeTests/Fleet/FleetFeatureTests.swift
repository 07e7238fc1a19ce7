import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import Bridge
@testable import BridgeFeatures
@testable import BridgeFleet
@testable import BridgeHomeAssistant
@testable import BridgeModel

/// The features' side of a fleet (docs/fleet.md): Home Assistant configs and retained device topics belong to the owner.
@Suite struct FleetFeatureTests {
    func fleetConfig(_ devices: [DeviceConfig], id: String = "a") -> BridgeConfig {
        var config = DiscoveryFixtures.config(devices, base: "b")
        config.fleet = FleetSettings(id: id, handoverAfter: .seconds(30))
        config.mqtt.bridgeID = id
        return config
    }

    func devices() throws -> (DeviceConfig, DeviceConfig) {
        (DiscoveryFixtures.device("lamp", "C0:FF:EE:00:00:03", [try DiscoveryFixtures.channel("led", .hex)]),
         DiscoveryFixtures.device("strap", "C0:FF:EE:00:00:01", [try DiscoveryFixtures.channel("hr", .hex)]))
    }

    @Test func topicsOfAFleetMember() {
        let topics = BridgeTopics(base: "b/x", bridgeID: "kitchen")
        #expect(topics.bridgeState == "b/x/bridge/kitchen/state")
        #expect(BridgeTopics(base: "b/x").bridgeState == "b/x/bridge/state")
        #expect(topics.parseBridgeState("b/x/bridge/hall/state") == "hall")
        #expect(topics.parseBridgeState("b/x/bridge/state") == nil)
        #expect(topics.parseOwner("b/x/lamp/owner") == "lamp")
        #expect(topics.parseOwner("b/x/lamp/owner/request") == nil)
        #expect(FleetFeature.parseRequest(topics, "b/x/lamp/owner/request") == "lamp")
        var settings = MQTTSettings(baseTopic: "b")
        settings.bridgeID = "kitchen"
        #expect(MQTTConfiguration(settings: settings).will?.topic == "b/bridge/kitchen/state")
        #expect(MQTTService.offline(settings).topic == "b/bridge/kitchen/state")
    }

    @Test func ownerRecordsRoundTripAndGarbageMeansNoOwner() {
        let record = OwnerRecord(bridge: "hall", rssi: -61, since: 1_700_000_000)
        #expect(FleetFeature.payload(record) == #"{"bridge":"hall","rssi":-61,"since":1700000000}"#)
        #expect(FleetFeature.record(FleetFeature.payload(record)) == record)
        #expect(FleetFeature.record("") == nil)
        #expect(FleetFeature.record("{\"bridge\":\"\"}") == nil)
        #expect(FleetFeature.record("not json") == nil)
        #expect(FleetFeature.record("{\"bridge\":\"x\",\"rssi\":-9999}")?.rssi == -127)
        #expect(FleetFeature.request("{\"bridge\":\"b\",\"rssi\":-40}")! == ("b", -40))
        #expect(FleetFeature.request("{\"bridge\":\"b\"}") == nil)
    }

    @Test func configsSayOnlyTheDevicesAvailability() throws {
        let (lamp, _) = try devices()
        let messages = HomeAssistantDiscovery(config: fleetConfig([lamp]), version: "1").messages(for: lamp, identity: nil)
        let parsed = try DiscoveryFixtures.parsed(messages)
        for value in parsed.values where value["availability"] != nil {
            #expect(value["availability"]?.arrayValue?.compactMap { $0["topic"]?.stringValue } == ["b/lamp/availability"])
        }
        #expect(!parsed.isEmpty)
    }

    @Test func homeAssistantConfigsArePublishedAndClearedOnlyForOwnedDevices() async throws {
        let (lamp, strap) = try devices()
        let config = fleetConfig([lamp, strap])
        try await withFeature(HomeAssistantFeature(version: "1", logger: .init(label: "test"))) { host, link in
            host.emit(.configApplied(old: nil, new: config))
            host.emit(.brokerConnected)
            host.emit(.ownership(lamp, owned: true))
            try await eventually("lamp's configs") { link.published.withLock { !$0.isEmpty } }
            // A retained config of a device nobody here owns: never ours to clear in a fleet.
            let stranger = "homeassistant/sensor/gattbridge_c0ffee000009/x/config"
            _ = host.route(MQTTMessage(topic: stranger, string: #"{"availability":[{"topic":"b/bridge/state"}]}"#,
                                       qos: .atLeastOnce, retain: true))
            // Both devices leave the config: only the owned one's configs are cleared.
            host.emit(.configApplied(old: config, new: fleetConfig([])))
            let lampTopics = HomeAssistantDiscovery(config: config, version: "1").configTopics(of: lamp)
            try await eventually("lamp cleared") {
                link.published.withLock { msgs in lampTopics.allSatisfy { t in msgs.contains { $0.topic == t && $0.payload.isEmpty } } }
            }
            let strapTopics = HomeAssistantDiscovery(config: config, version: "1").configTopics(of: strap)
            link.published.withLock { msgs in
                #expect(!msgs.contains { strapTopics.contains($0.topic) })
                #expect(!msgs.contains { $0.topic == stranger })
            }
        }
    }

    @Test func aReleasedDeviceIsNotRepublishedAfterAReconnect() async throws {
        let (lamp, _) = try devices()
        try await withFeature(DeviceTopicFeature.availability) { host, link in
            host.emit(.configApplied(old: nil, new: fleetConfig([lamp])))
            host.emit(.brokerConnected)
            host.emit(.availability(lamp, online: true))
            host.emit(.availability(lamp, online: false))
            host.emit(.released(lamp))
            host.emit(.brokerDisconnected)
            host.emit(.brokerConnected)
            host.emit(.availability(lamp, online: true))       // a marker: everything before it was handled
            try await eventually("marker") { link.payloads("b/lamp/availability").count == 3 }
            #expect(link.payloads("b/lamp/availability") == ["online", "offline", "online"])
        }
    }

    /// End to end through the feature: the retained state says nobody owns the device; after listening and its
    /// claim delay the bridge publishes its record and tells the core it owns the device.
    @Test func theFeatureClaimsAnUnownedDeviceItSees() async throws {
        let (lamp, _) = try devices()
        try await withFeature(FleetFeature(logger: .init(label: "test"))) { host, link in
            var requests = host.requestStream.makeAsyncIterator()
            host.emit(.configApplied(old: nil, new: fleetConfig([lamp])))
            try await eventually("subscribed") {
                link.filters.withLock { Set($0) } == ["b/+/owner", "b/bridge/+/state", "b/+/owner/request"]
            }
            host.emit(.brokerConnected)
            host.emit(.sighting(lamp, -40))
            let request = await requests.next()
            guard case .ownership(let device, let owned) = request else { Issue.record("no ownership"); return }
            #expect(device == "lamp" && owned)
            let records = link.payloads("b/lamp/owner").compactMap(FleetFeature.record)
            #expect(records.map(\.bridge) == ["a"])
            #expect(records.first?.rssi == -40)
        }
    }

    /// `offline` on this bridge's own state while it is connected is someone else's: said back at once (retained
    /// `online`), and the devices' availability a moment later; another bridge's state is left alone.
    @Test func aForgedOfflineOnTheOwnStateIsSaidBack() async throws {
        let (lamp, _) = try devices()
        try await withFeature(FleetFeature(logger: .init(label: "test"))) { host, link in
            var requests = host.requestStream.makeAsyncIterator()
            host.emit(.configApplied(old: nil, new: fleetConfig([lamp])))
            try await eventually("subscribed") { link.filters.withLock { $0.count } == 3 }
            host.emit(.brokerConnected)
            _ = host.route(MQTTMessage(topic: "b/bridge/c/state", string: "offline"))
            _ = host.route(MQTTMessage(topic: "b/bridge/a/state", string: "offline"))
            try await eventually("said back") { link.payloads("b/bridge/a/state") == ["online"] }
            #expect(link.payloads("b/bridge/c/state").isEmpty)
            guard case .republish(let states) = await requests.next() else { Issue.record("no republish"); return }
            #expect(!states)
        }
    }

    /// A reload that renames the bridge gives its devices up (the core still believed it owned them) and claims
    /// them again under the new id.
    @Test func aNewIdGivesUpAndClaimsAgain() async throws {
        let (lamp, _) = try devices()
        try await withFeature(FleetFeature(logger: .init(label: "test"))) { host, link in
            var requests = host.requestStream.makeAsyncIterator()
            host.emit(.configApplied(old: nil, new: fleetConfig([lamp])))
            try await eventually("subscribed") { link.filters.withLock { $0.count == 3 } }
            host.emit(.brokerConnected)
            host.emit(.sighting(lamp, -40))
            guard case .ownership(_, true) = await requests.next() else { Issue.record("not owned"); return }
            host.emit(.configApplied(old: fleetConfig([lamp]), new: fleetConfig([lamp], id: "z")))
            host.emit(.sighting(lamp, -41))
            guard case .ownership(_, false) = await requests.next() else { Issue.record("not given up"); return }
            guard case .ownership(_, true) = await requests.next() else { Issue.record("not claimed again"); return }
            #expect(link.payloads("b/lamp/owner").compactMap(FleetFeature.record).map(\.bridge) == ["a", "z"])
        }
    }

    @Test func theFeatureMarksADeviceOfflineWhenItsOwnersWillFires() async throws {
        let (lamp, _) = try devices()
        try await withFeature(FleetFeature(logger: .init(label: "test"))) { host, link in
            host.emit(.configApplied(old: nil, new: fleetConfig([lamp])))
            try await eventually("subscribed") { link.filters.withLock { $0.count == 3 } }
            host.emit(.brokerConnected)
            let record = FleetFeature.payload(OwnerRecord(bridge: "b", rssi: -50, since: 1))
            _ = host.route(MQTTMessage(topic: "b/lamp/owner", string: record, qos: .atLeastOnce, retain: true))
            _ = host.route(MQTTMessage(topic: "b/bridge/b/state", string: "online", qos: .atLeastOnce, retain: true))
            // An `offline` while listening is a stale retained state, not a will: each try is a fresh online → offline.
            try await eventually("listened") {
                _ = host.route(MQTTMessage(topic: "b/bridge/b/state", string: "online", qos: .atLeastOnce, retain: false))
                _ = host.route(MQTTMessage(topic: "b/bridge/b/state", string: "offline", qos: .atLeastOnce, retain: false))
                return !link.payloads("b/lamp/availability").isEmpty
            }
            #expect(link.payloads("b/lamp/availability").allSatisfy { $0 == "offline" })
            #expect(link.payloads("b/lamp/owner").isEmpty)    // never seen here: nothing to claim
        }
    }
}
