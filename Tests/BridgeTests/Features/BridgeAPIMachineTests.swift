import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import BridgeAdapters
@testable import BridgeFeatures
@testable import BridgeModel

/// The bridge API's decisions without a broker, a core or a clock (docs/bridge-api.md, docs/fleet.md).
@Suite struct BridgeAPIMachineTests {
    typealias M = BridgeAPIMachine

    static let lamp = DeviceConfig(name: "lamp", address: BluetoothAddress("C0:FF:EE:00:00:03")!, channels: [],
                                   source: DeviceSource(kind: .api, file: "/s/devices.d/lamp.yaml", line: 1))

    static func config(fleet id: String? = nil, base: String = "b") -> BridgeConfig {
        var config = testConfig(base: base, devices: [lamp])
        if let id { config.fleet = FleetSettings(id: id, handoverAfter: .seconds(30)) }
        return config
    }

    static func request(_ verb: String, _ payload: String = "{}", topic: String? = nil, retain: Bool = false)
        -> MQTTMessage {
        MQTTMessage(topic: topic ?? "b/bridge/request/\(verb)", string: payload, qos: .atLeastOnce, retain: retain)
    }

    static func parsed(_ verb: String, _ payload: String = "{}") -> BridgeRequest {
        try! BridgeRequest.parse(verb: verb, payload: Array(payload.utf8)).get()
    }

    /// A lone bridge that has its config.
    static func lone() -> M {
        var machine = M()
        _ = machine.handle(.event(.configApplied(old: nil, new: config())))
        return machine
    }

    /// A fleet bridge `id` that has its config, and the token of its settle timer.
    static func member(_ id: String = "b1") -> (M, UInt64) {
        var machine = M()
        _ = machine.handle(.event(.configApplied(old: nil, new: config(fleet: id))))
        return (machine, machine.settleToken)
    }

    @Test func nothingIsAnsweredOrPublishedBeforeTheConfig() {
        var machine = M()
        #expect(machine.handle(.event(.message(Self.request("devices")))) == [])
        #expect(machine.handle(.event(.brokerConnected)) == [])
        #expect(machine.handle(.event(.availability(Self.lamp, online: true)))  == [])
        #expect(machine.listed("[]") == [])
        #expect(machine.busyRouting == nil)
    }

    @Test func theConfigSubscribesAndPublishesInfoAndTheListing() {
        var machine = M()
        #expect(machine.handle(.event(.configApplied(old: nil, new: Self.config()))) == [
            .subscribe("b/bridge/request/#", retained: false),
            .publishInfo(topics: ["b/bridge/info"], bridge: nil),
            .listDevices,
        ])
        // The same filters again: not subscribed again (a subscription replays the retained messages).
        #expect(machine.handle(.event(.configApplied(old: Self.config(), new: Self.config()))) == [
            .publishInfo(topics: ["b/bridge/info"], bridge: nil), .listDevices,
        ])
    }

    @Test func aNewBaseTopicClearsTheOldRetainedTopics() {
        var machine = Self.lone()
        let actions = machine.handle(.event(.configApplied(old: Self.config(), new: Self.config(base: "c"))))
        #expect(actions == [
            .unsubscribe("b/bridge/request/#"), .subscribe("c/bridge/request/#", retained: false),
            .retain(topic: "b/bridge/devices", payload: ""), .retain(topic: "b/bridge/info", payload: ""),
            .publishInfo(topics: ["c/bridge/info"], bridge: nil), .listDevices,
        ])
    }

    @Test func theListingIsWrittenOnlyWhenItChangedOrTheBrokerMayHaveLostIt() {
        var machine = Self.lone()
        #expect(machine.listed("[1]") == [.retain(topic: "b/bridge/devices", payload: "[1]")])
        #expect(machine.listed("[1]") == [])
        #expect(machine.listed("[2]") == [.retain(topic: "b/bridge/devices", payload: "[2]")])
        #expect(machine.handle(.event(.brokerConnected)) == [
            .publishInfo(topics: ["b/bridge/info"], bridge: nil), .listDevices,
        ])
        #expect(machine.listed("[2]") == [.retain(topic: "b/bridge/devices", payload: "[2]")])
    }

    /// The read model holds the link, placement and owner; their events only ask for the listing again.
    @Test func linkAndPlacementEventsAskForTheListing() {
        var machine = Self.lone()
        #expect(machine.handle(.event(.availability(Self.lamp, online: true))) == [.listDevices])
        #expect(machine.handle(.event(.deviceEvent(Self.lamp, .disconnected(reason: "gone")))) == [.listDevices])
        let hci0 = AdapterStatus(name: "hci0", address: nil, powered: true, discovering: false, connections: 0,
                                 state: .ok, recoveries: 0, lastError: nil)
        // Info names the adapters: written again only when their names change.
        #expect(machine.handle(.event(.adapters([hci0], placement: ["lamp": "hci0"]))) == [
            .publishInfo(topics: ["b/bridge/info"], bridge: nil), .listDevices,
        ])
        #expect(machine.handle(.event(.adapters([hci0], placement: [:]))) == [.listDevices])
        // Ownership is the fleet directory's; a lone bridge ignores it.
        #expect(machine.handle(.event(.ownership(Self.lamp, owned: false))) == [])
    }

    @Test func requestsAreServedAnsweredOrIgnored() {
        var machine = Self.lone()
        let devices = Self.request("devices", #"{"transaction":1}"#)
        #expect(machine.handle(.event(.message(devices))) == [
            .serve(Self.parsed("devices", #"{"transaction":1}"#), devices, on: "b/bridge/response/devices",
                   answered: true),
        ])
        let bad = Self.request("devices", "{")
        let actions = machine.handle(.event(.message(bad)))
        guard case .answer(bad, on: "b/bridge/response/devices", let payload)? = actions.first, actions.count == 1 else {
            Issue.record("\(actions)")
            return
        }
        #expect(payload.contains("invalid JSON"))
        let retained = Self.request("devices", retain: true)
        #expect(machine.handle(.event(.message(retained))) == [
            .warning("retained bridge request on b/bridge/request/devices ignored"),
        ])
        #expect(machine.handle(.event(.message(Self.request("x", topic: "b/lamp/availability")))) == [])
    }

    @Test func aResponseTopicTheBridgeDoesNotAnswerOnIsDropped() {
        var machine = Self.lone()
        var message = Self.request("health")
        message.responseTopic = "b/lamp/led/set"
        var served = message
        served.responseTopic = nil
        #expect(machine.handle(.event(.message(message))) == [
            .warning("response topic b/lamp/led/set of a bridge request ignored"),
            .serve(Self.parsed("health"), served, on: "b/bridge/response/health", answered: true),
        ])
    }

    @Test func atMostFourLongRequestsRunTheFifthIsBusy() {
        var machine = Self.lone()
        for n in 1...M.maxLongRequests {
            let actions = machine.handle(.event(.message(Self.request("scan"))))
            guard case .startLong(let long)? = actions.first else { Issue.record("\(actions)"); return }
            #expect(long.requester == "bridge-api/scan/\(n)" && long.responseTopic == "b/bridge/response/scan")
        }
        let fifth = machine.handle(.event(.message(Self.request("inspect", #"{"address":"C0:FF:EE:00:00:09"}"#))))
        guard case .answer(_, on: "b/bridge/response/inspect", let payload)? = fifth.first else {
            Issue.record("\(fifth)")
            return
        }
        #expect(payload.contains("busy: 4 scans or inspections are running"))
        _ = machine.handle(.longDone)
        #expect(machine.longRequests == M.maxLongRequests - 1)
        let next = machine.handle(.event(.message(Self.request("scan"))))
        guard case .startLong(let long)? = next.first else { Issue.record("\(next)"); return }
        #expect(long.requester == "bridge-api/scan/5")
    }

    // MARK: - Fleet

    @Test func aFleetMemberHoldsSharedRequestsUntilItSettles() {
        var machine = M()
        let joined = machine.handle(.event(.configApplied(old: nil, new: Self.config(fleet: "b1"))))
        #expect(joined == [
            .subscribe("b/bridge/request/#", retained: false),
            .subscribe("b/bridge/b1/request/#", retained: false),
            .subscribe("b/+/owner", retained: true),
            .subscribe("b/bridge/+/state", retained: true),
            .subscribe("b/+/availability", retained: false),
            .publishInfo(topics: ["b/bridge/b1/info"], bridge: "b1"),
            .listDevices,
            .armSettle(token: 1),
        ])
        #expect(machine.busyRouting?.answersShared == false)
        let shared = Self.request("devices")
        #expect(machine.handle(.event(.message(shared))) == [])
        #expect(machine.held == [shared])
        // Its own requests are its own to answer at once.
        let own = Self.request("health", topic: "b/bridge/b1/request/health")
        #expect(machine.handle(.event(.message(own))) == [
            .serve(Self.parsed("health"), own, on: "b/bridge/b1/response/health", answered: true),
        ])
        // Its own listing is written; the shared one is not, yet.
        #expect(machine.listed("[1]") == [.retain(topic: "b/bridge/b1/devices", payload: "[1]")])
        #expect(machine.handle(.settle(0)) == [])
        #expect(machine.handle(.settle(1)) == [
            .notice("this bridge answers the fleet's shared bridge requests now (the live bridge with the lowest id)"),
            .publishInfo(topics: ["b/bridge/b1/info", "b/bridge/info"], bridge: "b1"),
            .listDevices,
            .serve(Self.parsed("devices"), shared, on: "b/bridge/response/devices", answered: true),
        ])
        #expect(machine.held.isEmpty && machine.busyRouting?.answersShared == true)
        #expect(machine.listed("[1]") == [.retain(topic: "b/bridge/devices", payload: "[1]")])
    }

    @Test func aReconnectUnsettlesAndOnlyTheNewestTimerCounts() {
        var (machine, first) = Self.member()
        #expect(machine.handle(.event(.brokerConnected)) == [
            .publishInfo(topics: ["b/bridge/b1/info"], bridge: "b1"), .listDevices, .armSettle(token: first + 1),
        ])
        #expect(machine.handle(.settle(first)) == [])
        #expect(machine.fleet?.settled == false)
        _ = machine.handle(.settle(first + 1))
        #expect(machine.fleet?.settled == true)
    }

    @Test func atMostMaxHeldRequestsWaitAndLeavingTheFleetDropsThem() {
        var (machine, _) = Self.member()
        for _ in 0..<M.maxHeld { #expect(machine.handle(.event(.message(Self.request("devices")))) == []) }
        #expect(machine.handle(.event(.message(Self.request("health")))) == [
            .warning("bridge request on b/bridge/request/health dropped: the fleet's bridge states have not arrived yet"),
        ])
        #expect(machine.held.count == M.maxHeld)
        _ = machine.handle(.event(.configApplied(old: Self.config(fleet: "b1"), new: Self.config())))
        #expect(machine.held.isEmpty && machine.fleet == nil)
    }

    @Test func anotherCoordinatorAnswersAndDeviceChangesAreAppliedSilently() {
        var (machine, token) = Self.member("b1")
        let state = MQTTMessage(topic: "b/bridge/a0/state", string: "online", qos: .atLeastOnce, retain: true)
        #expect(machine.handle(.event(.message(state))) == [.listDevices])
        #expect(machine.handle(.settle(token)) == [])      // a0 is the coordinator: nothing shared to write
        #expect(machine.handle(.event(.message(Self.request("devices")))) == [])
        let add = Self.request("device/add", #"{"name":"x"}"#)
        #expect(machine.handle(.event(.message(add))) == [
            .serve(Self.parsed("device/add", #"{"name":"x"}"#), add, on: "b/bridge/response/device/add", answered: false),
        ])
        // The coordinator leaves: this bridge takes over the shared topics.
        let gone = MQTTMessage(topic: "b/bridge/a0/state", string: "offline", qos: .atLeastOnce, retain: true)
        #expect(machine.handle(.event(.message(gone))) == [
            .notice("this bridge answers the fleet's shared bridge requests now (the live bridge with the lowest id)"),
            .publishInfo(topics: ["b/bridge/b1/info", "b/bridge/info"], bridge: "b1"),
            .listDevices,
            .listDevices,
        ])
    }

    @Test func anInspectionOfAnOwnedDeviceIsItsOwnersToAnswer() {
        var (machine, token) = Self.member("b1")
        _ = machine.handle(.event(.message(MQTTMessage(topic: "b/bridge/a0/state", string: "online"))))
        _ = machine.handle(.settle(token))
        #expect(machine.handle(.event(.ownership(Self.lamp, owned: true))) == [.listDevices])
        let inspect = Self.request("inspect", #"{"address":"C0:FF:EE:00:00:03"}"#)
        let actions = machine.handle(.event(.message(inspect)))
        guard case .startLong(let long)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(long.responseTopic == "b/bridge/response/inspect")
        // Another device's inspection is the coordinator's.
        #expect(machine.handle(.event(.message(Self.request("inspect", #"{"address":"C0:FF:EE:00:00:09"}"#)))) == [])
    }
}
