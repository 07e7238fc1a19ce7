import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFeatures
@testable import BridgeFleet
@testable import BridgeModel

@Suite struct FleetDirectoryTests {
    private func settled(_ id: String, live: [String] = []) -> FleetDirectory {
        var directory = FleetDirectory(id: id)
        for bridge in live { directory.bridgeState(bridge, online: true) }
        directory.settle()
        return directory
    }

    @Test func theLiveBridgeWithTheLowestIdCoordinates() {
        var b = settled("b", live: ["c"])
        #expect(b.coordinator == "b" && b.isCoordinator)
        b.bridgeState("a", online: true)
        #expect(b.coordinator == "a" && !b.isCoordinator)
        #expect(b.route(.devices) == .ignore && b.route(.health) == .ignore && b.route(.scan) == .ignore)
        #expect(b.route(nil) == .ignore)          // an unreadable request: one error answer, from the coordinator
        // Its own retained state never demotes a running bridge.
        b.bridgeState("b", online: false)
        b.bridgeState("a", online: false)
        #expect(b.isCoordinator && b.route(.devices) == .answer && b.route(nil) == .answer)
    }

    @Test func nothingSharedBeforeTheBridgeStatesHadTimeToArrive() {
        var c = FleetDirectory(id: "c")
        #expect(c.coordinator == "c" && !c.isCoordinator)
        #expect(c.route(.devices) == .ignore && c.route(.deviceAdd) == .applySilently)
        c.bridgeState("a", online: true)
        c.settle()
        #expect(!c.isCoordinator)
        c.unsettle()                              // a broker reconnect
        c.bridgeState("a", online: false)
        #expect(!c.isCoordinator)
        c.settle()
        #expect(c.isCoordinator)
    }

    @Test func deviceChangesAreAppliedEverywhereAndAnsweredOnce() {
        let a = settled("a", live: ["b"])
        let b = settled("b", live: ["a"])
        for verb in [BridgeRequest.Verb.deviceAdd, .deviceRemove] {
            #expect(a.route(verb) == .answer)
            #expect(b.route(verb) == .applySilently)
        }
    }

    @Test func theOwnerAnswersAnInspectionOfItsDevice() {
        var a = settled("a", live: ["b"])
        var b = settled("b", live: ["a"])
        a.owner("strap", "b")
        b.owner("strap", "b")
        b.setOwned("strap", true)
        #expect(b.route(.inspect, inspecting: "strap") == .answer)
        #expect(a.route(.inspect, inspecting: "strap") == .ignore)
        // Not a saved device, or one without an owner: the coordinator.
        #expect(a.route(.inspect) == .answer && b.route(.inspect) == .ignore)
        #expect(a.route(.inspect, inspecting: "lamp") == .answer && b.route(.inspect, inspecting: "lamp") == .ignore)
        // The owner went offline (its will): its record names a dead bridge, so the coordinator answers.
        a.bridgeState("b", online: false)
        #expect(a.liveOwner("strap") == nil && a.route(.inspect, inspecting: "strap") == .answer)
    }

    @Test func aRecordNamingThisBridgeIsNoOwnerUntilTheCoreConfirms() {
        var a = settled("a")
        a.owner("strap", "a")                     // a claim settling, or left from an earlier run
        #expect(a.liveOwner("strap") == nil)
        a.setOwned("strap", true)
        #expect(a.liveOwner("strap") == "a")
        a.setOwned("strap", false)
        #expect(a.liveOwner("strap") == nil)
    }

    @Test func aCoordinatorGoingOfflineHandsTheSharedTopicsToTheNext() {
        var b = settled("b", live: ["a", "c"])
        var c = settled("c", live: ["a", "b"])
        #expect(!b.isCoordinator && !c.isCoordinator)
        b.bridgeState("a", online: false)
        c.bridgeState("a", online: false)
        #expect(b.isCoordinator && !c.isCoordinator)
        #expect(b.route(.devices) == .answer && c.route(.devices) == .ignore)
        // a comes back: it coordinates again.
        b.bridgeState("a", online: true)
        #expect(!b.isCoordinator && b.coordinator == "a")
    }

    @Test func aFleetOfOneAnswersEverything() {
        let a = settled("a")
        for verb in BridgeRequest.Verb.allCases { #expect(a.route(verb) == .answer) }
        #expect(a.route(.inspect, inspecting: "strap") == .answer)
    }

    @Test func theListingSaysTheFleetsView() {
        var a = settled("a", live: ["b"])
        a.setOwned("mine", true)
        a.availability("mine", online: false)     // the session's state wins for a device this bridge owns
        #expect(a.listing("mine", session: .online) == ("a", .online))
        #expect(a.listing("mine", session: nil) == ("a", .connecting))
        a.owner("theirs", "b")
        #expect(a.listing("theirs", session: .offline) == ("b", .offline))
        a.availability("theirs", online: true)
        #expect(a.listing("theirs", session: .offline) == ("b", .online))
        a.bridgeState("b", online: false)         // b's will: no live owner; the availability b's will made others say
        a.availability("theirs", online: false)
        #expect(a.listing("theirs", session: nil) == (nil, .offline))
        #expect(a.listing("new", session: nil) == (nil, .connecting))
        a.availability("theirs", online: nil)     // cleared (the device was removed)
        #expect(a.listing("theirs", session: nil) == (nil, .connecting))
    }

    @Test func unknownDevicesAreRememberedOnlyUpToABound() {
        var a = settled("a")
        for i in 0..<FleetDirectory.maxDevices { a.owner("d\(i)", "b") }
        a.owner("one-more", "b")
        #expect(a.records.count == FleetDirectory.maxDevices && a.records["one-more"] == nil)
        a.owner("d0", "c")                        // a known one still changes
        #expect(a.records["d0"] == "c")
    }
}

@Suite struct DeviceListingFleetTests {
    @Test func aFleetsListingNamesEachDevicesOwner() throws {
        let device = DeviceConfig(name: "lamp", address: BluetoothAddress("C0:FF:EE:00:00:03")!, channels: [])
        let other = DeviceConfig(name: "strap", address: BluetoothAddress("C0:FF:EE:00:00:04")!, channels: [])
        let config = testConfig(devices: [device, other])
        let listing = DeviceListing.json(config, states: ["lamp": .online], adapter: { _ in "hci0" },
                                         owner: { $0.name == "lamp" ? "a" : nil })
        #expect(listing.serialized == #"[{"name":"lamp","address":"C0:FF:EE:00:00:03","source":"config","adapter":"hci0","state":"online","owner":"a","channels":[]},{"name":"strap","address":"C0:FF:EE:00:00:04","source":"config","adapter":"hci0","state":"connecting","owner":null,"channels":[]}]"#)
        // A lone bridge's listing has no owner at all.
        #expect(DeviceListing.json(config, states: [:], adapter: { _ in "hci0" })[0]?["owner"] == nil)
    }
}

@Suite struct FeatureHostRetainedTests {
    private func message(_ topic: String, _ text: String) -> MQTTMessage {
        MQTTMessage(topic: topic, string: text, qos: .atLeastOnce, retain: false)
    }

    /// Two features on `b/+/owner`: one SUBSCRIBE; the second gets the last copy of each topic, the first nothing
    /// again.
    @Test func aSecondFeatureOnARetainedFilterGetsCopiesNotASecondSubscribe() async throws {
        let link = RecordingLink()
        let host = FeatureHost(link: link)
        let (first, firstContext) = host.attach()
        let (second, secondContext) = host.attach()
        var firstIterator = first.makeAsyncIterator()
        var secondIterator = second.makeAsyncIterator()
        firstContext.subscribe("b/+/owner", retained: true)
        #expect(host.route(message("b/strap/owner", #"{"bridge":"a"}"#)))
        #expect(host.route(message("b/strap/owner", #"{"bridge":"b"}"#)))
        #expect(host.route(message("b/lamp/owner", #"{"bridge":"a"}"#)))
        #expect(host.route(message("b/lamp/owner", "")))           // cleared: nothing to copy
        secondContext.subscribe("b/+/owner", retained: true)
        #expect(link.filters.withLock { $0 } == ["b/+/owner"])
        #expect(host.route(message("b/strap/owner", #"{"bridge":"c"}"#)))
        host.finish()

        var firstSeen: [String] = []
        while let event = await firstIterator.next() {
            if case .message(let m) = event { firstSeen.append(m.payloadString) }
        }
        #expect(firstSeen == [#"{"bridge":"a"}"#, #"{"bridge":"b"}"#, #"{"bridge":"a"}"#, "", #"{"bridge":"c"}"#])
        var secondSeen: [(String, Bool)] = []
        while let event = await secondIterator.next() {
            if case .message(let m) = event { secondSeen.append((m.payloadString, m.retain)) }
        }
        #expect(secondSeen.map(\.0) == [#"{"bridge":"b"}"#, #"{"bridge":"c"}"#])
        #expect(secondSeen.map(\.1) == [true, false])
    }

    @Test func plainFiltersKeepNoCopies() async throws {
        let link = RecordingLink()
        let host = FeatureHost(link: link)
        let (_, firstContext) = host.attach()
        let (second, secondContext) = host.attach()
        firstContext.subscribe("b/bridge/request/#")
        #expect(host.route(message("b/bridge/request/devices", "{}")))
        secondContext.subscribe("b/bridge/request/#")
        host.finish()
        var seen = 0
        for await event in second { if case .message = event { seen += 1 } }
        #expect(seen == 0)
    }
}
