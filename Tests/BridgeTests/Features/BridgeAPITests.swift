import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFeatures
@testable import BridgeFleet
@testable import BridgeModel
@testable import BridgeSession

@Suite struct BridgeRequestTests {
    private func parse(_ verb: String, _ payload: String) -> Result<BridgeRequest, BridgeRequest.Failure> {
        BridgeRequest.parse(verb: verb, payload: Array(payload.utf8))
    }

    @Test func transactionIsEchoedAndParametersChecked() {
        #expect(parse("devices", #"{"transaction":7}"#) ==
                .success(BridgeRequest(verb: .devices, parameters: .none, transaction: .int(7))))
        #expect(parse("devices", "") == .success(BridgeRequest(verb: .devices, parameters: .none, transaction: nil)))
        #expect(parse("scan", #"{"duration":2,"service":["180d"],"transaction":"a"}"#) ==
                .success(BridgeRequest(verb: .scan, parameters: .scan(duration: .seconds(2), services: [BluetoothUUID("180d")!]),
                                       transaction: .string("a"))))
        #expect(parse("scan", "{}") ==
                .success(BridgeRequest(verb: .scan, parameters: .scan(duration: .seconds(10), services: []), transaction: nil)))
        #expect(parse("inspect", #"{"address":"c0:ff:ee:00:00:01"}"#) ==
                .success(BridgeRequest(verb: .inspect, parameters: .address(BluetoothAddress("C0:FF:EE:00:00:01")!), transaction: nil)))
        #expect(parse("device/add", #"{"name":"x","transaction":1}"#) ==
                .success(BridgeRequest(verb: .deviceAdd, parameters: .device(.object([("name", .string("x"))])), transaction: .int(1))))
    }

    @Test func badRequestsFailWithAMessageAndKeepTheTransaction() throws {
        func failure(_ verb: String, _ payload: String) -> BridgeRequest.Failure? {
            if case .failure(let failure) = parse(verb, payload) { return failure }
            return nil
        }
        #expect(failure("devices", "{")?.message.hasPrefix("invalid JSON") == true)
        #expect(failure("devices", "[1]")?.message == "request must be a JSON object")
        #expect(failure("nope", #"{"transaction":"t"}"#)?.transaction == .string("t"))
        #expect(failure("nope", "{}")?.message.hasPrefix("unknown verb \"nope\"") == true)
        #expect(failure("devices", #"{"transaction":[1]}"#)?.message == "transaction must be a string or a number")
        #expect(failure("devices", #"{"extra":1}"#)?.message == "unknown key \"extra\" in a devices request")
        #expect(failure("scan", #"{"duration":61}"#) != nil)
        #expect(failure("scan", #"{"duration":0.5}"#) != nil)
        #expect(failure("scan", #"{"service":["nope"]}"#) != nil)
        #expect(failure("inspect", #"{"address":"xx"}"#) != nil)
        #expect(failure("device/remove", "{}") != nil)
        let huge = "{\"a\":\"" + String(repeating: "x", count: BridgeRequest.maxBytes) + "\"}"
        #expect(failure("devices", huge)?.message.contains("limit") == true)
        let invalid: [UInt8] = [0x7B, 0xFF, 0x7D]
        if case .failure(let failure) = BridgeRequest.parse(verb: "devices", payload: invalid) {
            #expect(failure.message == "request is not valid UTF-8")
        } else {
            Issue.record("accepted invalid UTF-8")
        }
    }

    @Test func responsesHaveTheSpecShape() {
        #expect(BridgeResponse.ok(.array([]), transaction: .int(3)) == #"{"status":"ok","data":[],"transaction":3}"#)
        #expect(BridgeResponse.error("no", transaction: nil) == #"{"status":"error","error":"no"}"#)
    }
}

@Suite struct DeviceListingTests {
    @Test func oneElementPerDeviceWithItsSourceAndState() throws {
        let channel = ChannelConfig(name: "led", service: BluetoothUUID("ffe5"), characteristic: BluetoothUUID("ffe9")!,
                                    codec: try Codec(.hex), mode: .read, writable: true)
        let device = DeviceConfig(name: "lamp", address: BluetoothAddress("C0:FF:EE:00:00:03")!, channels: [channel],
                                  source: DeviceSource(kind: .api, file: "/s/devices.d/lamp.yaml", line: 1))
        let listing = DeviceListing.json(testConfig(devices: [device]), states: [:], adapter: { _ in "hci0" })
        #expect(listing.serialized == #"[{"name":"lamp","address":"C0:FF:EE:00:00:03","source":"api","adapter":"hci0","state":"connecting","channels":[{"name":"led","characteristic":"ffe5/ffe9","codec":"hex","mode":"read","writable":true}]}]"#)
        let online = DeviceListing.json(testConfig(devices: [device]), states: ["lamp": .online], adapter: { _ in "hci1" })
        #expect(online[0]?["state"] == .string("online"))
    }

    /// The listing read from the read model says what the API's own copy used to: the same link rule, the placement
    /// before the configured adapter before the default one, and in a fleet the directory's owner and state.
    @Test func theReadModelsListingIsTheSameText() throws {
        let channel = ChannelConfig(name: "led", service: BluetoothUUID("ffe5"), characteristic: BluetoothUUID("ffe9")!,
                                    codec: try Codec(.hex), mode: .read, writable: true)
        let lamp = DeviceConfig(name: "lamp", address: BluetoothAddress("C0:FF:EE:00:00:03")!, channels: [channel],
                                source: DeviceSource(kind: .api, file: "/s/devices.d/lamp.yaml", line: 1))
        var fan = lamp
        fan.name = "fan"
        fan.address = BluetoothAddress("C0:FF:EE:00:00:04")!
        fan.adapter = "hci2"
        let config = testConfig(devices: [lamp, fan])
        var state = BridgeState()
        state.install(config, generation: 1)
        #expect(DeviceListing.json(state, fleet: nil, fallbackAdapter: "hci0").serialized ==
                DeviceListing.json(config, states: [:], adapter: { $0.adapter ?? "hci0" }).serialized)
        state.setOnline("lamp", false)
        state.setOnline("fan", true)
        state.placed([], placement: ["lamp": "hci1"])
        #expect(state.adaptersReported)
        let states: [String: DeviceLinkState] = ["lamp": .connecting, "fan": .online]
        let placement = ["lamp": "hci1"]
        let adapter = { (device: DeviceConfig) in placement[device.name] ?? device.adapter ?? "hci0" }
        #expect(DeviceListing.json(state, fleet: nil, fallbackAdapter: "hci0").serialized ==
                DeviceListing.json(config, states: states, adapter: adapter).serialized)
        state.setOnline("fan", false)
        #expect(DeviceListing.json(state, fleet: nil, fallbackAdapter: "hci0")[1]?["state"] == .string("offline"))
        var fleet = FleetDirectory(id: "b1")
        fleet.setOwned("fan", true)
        fleet.availability("lamp", online: true)
        let listed = DeviceListing.json(state, fleet: fleet, fallbackAdapter: "hci0")
        #expect(listed.serialized == DeviceListing.json(config, states: ["lamp": .online, "fan": .offline],
                                                        adapter: adapter, owner: { $0.name == "fan" ? "b1" : nil }).serialized)
    }
}

@Suite struct CommandReplyFeatureTests {
    @Test func resultsGoToTheResponseTopicWithTheCorrelationData() async throws {
        try await withFeature(CommandReplyFeature()) { host, link in
            let target = ReplyTarget(topic: "me/reply", correlationData: [1, 2, 3])
            host.emit(.completed(DeviceCommand(id: 1, channel: "led", kind: .set([1]), topic: "b/lamp/led/set",
                                               arrival: .now, replies: [target])))
            host.emit(.rejected(CommandRejection(topic: "b/lamp/led/set", reason: "expired", replies: [target])))
            host.emit(.rejected(CommandRejection(topic: "b/lamp/led/set", reason: "no reply wanted")))
            try await eventually("replied") { link.payloads("me/reply").count == 2 }
            #expect(link.payloads("me/reply") == [#"{"status":"ok"}"#, #"{"status":"error","error":"expired"}"#])
            #expect(link.published.withLock { $0.allSatisfy { $0.correlationData == [1, 2, 3] && !$0.retain } })
        }
    }

    @Test func repliesAreTakenFromTheResponseTopicOfACommand() {
        let rule = ReplyTopicRule(base: "b", discoveryPrefix: "homeassistant")
        var message = MQTTMessage(topic: "b/lamp/led/set", string: "ON")
        #expect(rule.replies(of: message) == [])
        message.responseTopic = "me/reply"
        message.correlationData = [9]
        #expect(rule.replies(of: message) == [ReplyTarget(topic: "me/reply", correlationData: [9])])
        message.responseTopic = "me/#"
        #expect(rule.replies(of: message) == [])
    }

    @Test func answersNeverGoToTheBridgesOwnTopicsOrTheDiscoveryPrefix() {
        let rule = ReplyTopicRule(base: "b", discoveryPrefix: "homeassistant")
        for topic in ["b/other/led/set", "b/bridge/kitchen/state", "b", "homeassistant/switch/x/config", "homeassistant"] {
            #expect(!rule.allows(topic), "\(topic)")
        }
        for topic in ["bx/reply", "me/reply", "homeassistantx/r"] { #expect(rule.allows(topic), "\(topic)") }
        let only = ReplyTopicRule(base: "b", discoveryPrefix: "homeassistant", replyPrefix: "replies")
        #expect(only.allows("replies/app/1"))
        #expect(!only.allows("me/reply") && !only.allows("replies") && !only.allows("repliesx/1"))
    }
}
