import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFeatures
@testable import BridgeModel
@testable import BridgeWeb

/// The web page's view of the bridge, made from the read model and the values as MQTT has them (docs/web.md).
@Suite struct WebStateViewTests {
    static let led = DeviceConfig(
        name: "desk <led>", address: BluetoothAddress("C0:FF:EE:00:00:03")!,
        channels: [ChannelConfig(name: "led", characteristic: BluetoothUUID("2a19")!,
                                 codec: try! Codec(.hex, values: [("ON", "01"), ("OFF", "00")]), writable: true),
                   ChannelConfig(name: "raw", characteristic: BluetoothUUID("2a1a")!, codec: try! Codec(.hex),
                                 writable: true)],
        source: DeviceSource(kind: .api, file: "/s/devices.d/desk.yaml", line: 1))
    static let thermo = DeviceConfig(name: "thermo", address: BluetoothAddress("A4:C1:38:00:00:01")!, channels: [],
                                     advert: .auto)

    @Test func eachDeviceWithItsLinkValuesCommandsAndErrors() throws {
        var state = BridgeState()
        state.install(testConfig(devices: [Self.led, Self.thermo]), generation: 1)
        let now = ContinuousClock.now
        state.setOnline("desk <led>", true, at: now - .seconds(3))
        state.updateDevice("desk <led>") { $0.rssi = -61 }
        let view = WebStateView.json(WebStateView.Inputs(
            health: .object([("version", "1.0")]), state: state, listing: nil,
            values: { device in device.name == "thermo" ? [("temperature", "21.5")] : [("led", "ON")] },
            errors: { $0 == "desk <led>" ? [WebDeviceErrors.Entry(at: now - .seconds(2), text: "write failed")] : [] },
            baseTopic: "b", fleetID: nil, now: now))
        #expect(view["bridge"]?["base_topic"]?.stringValue == "b")
        #expect(view["bridge"]?["version"]?.stringValue == "1.0")
        #expect(view["bridge"]?["fleet"] == .null)
        let led = try #require(view["devices"]?[0])
        #expect(led["name"]?.stringValue == "desk <led>")
        #expect(led["source"]?.stringValue == "api")
        #expect(led["state"]?.stringValue == "online")
        #expect(led["kind"]?.stringValue == "connected")
        #expect(led["rssi"] == .int(-61))
        #expect(led["last_seen_s"] == .int(3))
        #expect(led["values"]?["led"]?["value"]?.stringValue == "ON")
        #expect(led["commands"] == .array([
            .object([("channel", "led"), ("values", .array(["ON", "OFF"]))]),
            .object([("channel", "raw"), ("values", .null)]),
        ]))
        #expect(led["errors"]?[0]?["text"]?.stringValue == "write failed")
        let thermo = try #require(view["devices"]?[1])
        #expect(thermo["kind"]?.stringValue == "passive")
        #expect(thermo["state"]?.stringValue == "connecting")
        #expect(thermo["values"]?["temperature"]?["value"]?.stringValue == "21.5")
        #expect(thermo["last_seen_s"] == .null)
    }

    @Test func thePublishedListingGivesOwners() throws {
        var state = BridgeState()
        state.install(testConfig(devices: [Self.thermo]), generation: 1)
        let listing = JSONValue.array([.object([("name", "thermo"), ("address", "A4:C1:38:00:00:01"), ("source", "config"),
                                                ("adapter", "hci0"), ("state", "online"), ("owner", "kitchen"),
                                                ("channels", .array([]))])])
        let view = WebStateView.json(WebStateView.Inputs(
            health: .object([]), state: state, listing: listing, values: { _ in [] }, errors: { _ in [] },
            baseTopic: "b", fleetID: "hall", now: .now))
        #expect(view["devices"]?[0]?["owner"]?.stringValue == "kitchen")
        #expect(view["bridge"]?["fleet"]?["id"]?.stringValue == "hall")
    }

    @Test func errorsAreBounded() {
        var errors = WebDeviceErrors()
        let now = ContinuousClock.now
        for index in 0..<25 { errors.record("d", "e\(index)", at: now) }
        #expect(errors.of("d").map(\.text) == (15..<25).map { "e\($0)" })
        errors.keep(only: [])
        #expect(errors.of("d").isEmpty)
    }
}

@Suite struct LocalRepliesTests {
    @Test func anAnswerToTheLocalTopicReachesTheAsker() async {
        let replies = LocalReplies()
        let answer = await replies.ask(timeout: .seconds(30)) { topic in
            #expect(LocalReplyTopic.isLocal(topic))
            #expect(replies.deliver(topic, "{\"status\":\"ok\"}"))
        }
        #expect(answer == "{\"status\":\"ok\"}")
    }

    @Test func aGuessedTopicIsSwallowedAndAnsweredNothing() async {
        let replies = LocalReplies()
        #expect(replies.deliver(LocalReplyTopic.prefix + "guess/1", "x"))
        #expect(!replies.deliver("b/bridge/response/devices", "x"))
        let answer = await replies.ask(timeout: .milliseconds(50)) { _ in }
        #expect(answer == nil)
    }

    @Test func theReplyRuleAlwaysAllowsLocalTopics() {
        let rule = ReplyTopicRule(base: "b", discoveryPrefix: "homeassistant", replyPrefix: "replies")
        #expect(rule.allows(LocalReplyTopic.prefix + "abc/1"))
        #expect(!rule.allows("elsewhere/1"))
    }
}

@Suite struct RecentLogTests {
    @Test func keepsTheLastEntriesOfTheWatchedTopic() {
        let log = RecentLog()
        log.record("b/bridge/log", "{}")
        #expect(log.entries().isEmpty)
        log.watch("b/bridge/log")
        for index in 0..<(RecentLog.capacity + 5) { log.record("b/bridge/log", "{\"n\":\(index)}") }
        log.record("b/other", "{}")
        let entries = log.entries()
        #expect(entries.count == RecentLog.capacity)
        #expect(entries.first?.payload == "{\"n\":5}")
        #expect(log.entries(after: entries[entries.count - 2].sequence).map(\.payload) == ["{\"n\":\(RecentLog.capacity + 4)}"])
    }
}
