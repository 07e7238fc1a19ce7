import Adverts
import Bluetooth
import MQTT
import Testing
@testable import BridgeFeatureHost
@testable import BridgeModel

/// The host's fan-out: broadcasts (about one a second per sensor) reach only the features that want them.
@Suite struct FeatureHostTests {
    @Test func broadcastsReachOnlyTheFeaturesThatWantThem() async {
        let host = FeatureHost(link: RecordingLink())
        let (plain, _) = host.attach()
        let (adverts, _) = host.attach(broadcasts: true)
        let heard = HeardBroadcast(address: BluetoothAddress("A4:C1:38:00:00:01")!, adapter: "/org/bluez/hci0",
                                   rssi: -60, name: nil, broadcast: Broadcast())
        host.emit(.broadcast(heard))
        host.emit(.brokerConnected)
        host.finish()
        var seenByPlain: [String] = [], seenByAdverts: [String] = []
        for await event in plain { seenByPlain.append(Self.name(event)) }
        for await event in adverts { seenByAdverts.append(Self.name(event)) }
        #expect(seenByPlain == ["brokerConnected"])
        #expect(seenByAdverts == ["broadcast", "brokerConnected"])
    }

    /// Raw advertisements (the Bluetooth proxy's, tens a second) reach only the features that want them, not even
    /// those that want broadcasts.
    @Test func rawAdvertisementsReachOnlyTheFeaturesThatWantThem() async {
        let host = FeatureHost(link: RecordingLink())
        let (plain, _) = host.attach()
        let (adverts, _) = host.attach(broadcasts: true)
        let (proxy, _) = host.attach(rawAdvertisements: true)
        host.emit(.advertisement(HeardAdvertisement(address: BluetoothAddress("A4:C1:38:00:00:01")!, isRandom: false,
                                                    adapter: "/org/bluez/hci0", rssi: -60, data: [0x02, 0x09, 0x78])))
        host.emit(.brokerConnected)
        host.finish()
        var seen: [[String]] = [[], [], []]
        for (index, events) in [plain, adverts, proxy].enumerated() {
            for await event in events { seen[index].append(Self.name(event)) }
        }
        #expect(seen == [["brokerConnected"], ["brokerConnected"], ["advertisement", "brokerConnected"]])
    }

    /// A flood routed to a feature that does not keep up waits for it: the pump's `belowLimit` holds until the
    /// feature has handled enough, and what it handled leaves the backlog only once handled.
    @Test func routedMessagesCountUntilTheFeatureHasHandledThem() async throws {
        let host = FeatureHost(link: RecordingLink())
        let (events, context) = host.attach()
        context.subscribe("homeassistant/status")
        let birth = MQTTMessage(topic: "homeassistant/status", string: "online")
        var routed = 0
        while host.backlog.bytes < FeatureHost.backlogLimit {
            #expect(host.route(birth))
            routed += 1
        }
        #expect(host.backlog.bytes == routed * birth.footprint)
        let caughtUp = Task { await host.backlog.belowLimit() }
        var iterator = events.makeAsyncIterator()
        // Taking a message does not release it; asking for the next one (the first is handled) does.
        _ = await iterator.next()
        #expect(host.backlog.bytes == routed * birth.footprint)
        _ = await iterator.next()
        #expect(host.backlog.bytes == (routed - 1) * birth.footprint)
        await caughtUp.value
        for _ in 0..<(routed - 2) { _ = await iterator.next() }
        host.finish()
        #expect(await iterator.next() == nil)
        #expect(host.backlog.bytes == 0)
    }

    /// A loop with timers of its own releases a message after its handler, not when it queues it.
    @Test func aFeatureLoopReleasesAfterItsHandler() async {
        let host = FeatureHost(link: RecordingLink())
        let (events, context) = host.attach()
        context.subscribe("x")
        let message = MQTTMessage(topic: "x", string: "1")
        _ = host.route(message)
        _ = host.route(message)
        host.finish()
        var seen: [Int] = []
        await runFeatureLoop(events, timer: Never.self) { _ in
            seen.append(host.backlog.bytes)
            return []
        }
        #expect(seen == [2 * message.footprint, message.footprint])
        #expect(host.backlog.bytes == 0)
    }

    /// Once the features stop, nothing waits for them.
    @Test func belowLimitReturnsOnceTheFeaturesStopped() async {
        let host = FeatureHost(link: RecordingLink())
        let (_, context) = host.attach()
        context.subscribe("x")
        let big = MQTTMessage(topic: "x", payload: [UInt8](repeating: 0, count: FeatureHost.backlogLimit))
        _ = host.route(big)
        let waiting = Task { await host.backlog.belowLimit() }
        host.finish()
        await waiting.value
    }

    /// A feature whose run ended holds nothing against the backlog: its stream ends, later messages are not counted.
    @Test func aDetachedFeatureIsNotWaitedFor() async {
        let host = FeatureHost(link: RecordingLink())
        let (events, context) = host.attach()
        context.subscribe("x")
        let message = MQTTMessage(topic: "x", string: "1")
        _ = host.route(message)
        host.detach(context)
        for await delivery in events.deliveries { host.backlog.release(delivery.bytes) }
        _ = host.route(message)
        #expect(host.backlog.bytes == 0)
    }

    static func name(_ event: CoreEvent) -> String {
        switch event {
        case .broadcast: "broadcast"
        case .advertisement: "advertisement"
        case .brokerConnected: "brokerConnected"
        default: "other"
        }
    }
}
