import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import Testing
@testable import BridgeModel
@testable import BridgeSession

/// A `DeviceSession` driven in process against `FakeGATT`: reconnects, command ttl, ordering and stop, without the
/// bench.
@Suite struct DeviceSessionTests {
    let gatt = FakeGATT()
    let recorder = SessionRecorder()

    static let fastPolicy = ReconnectPolicy(
        rules: [.connectFailed: RetryRule(initialDelay: .milliseconds(20), maxDelay: .milliseconds(50), then: .retryConnect),
                .linkLost: RetryRule(initialDelay: .milliseconds(20), maxDelay: .milliseconds(50), then: .retryConnect)],
        fallback: RetryRule(initialDelay: .milliseconds(20), maxDelay: .milliseconds(50), then: .retryConnect))

    func device(ttl: Duration = .seconds(30)) throws -> DeviceConfig {
        DeviceConfig(name: "fake", address: FakeGATT.address, channels: [
            ChannelConfig(name: "n", characteristic: BluetoothUUID("aaa1")!, codec: try Codec(.hex), mode: .notify),
            ChannelConfig(name: "led", characteristic: BluetoothUUID("aaa2")!, codec: try Codec(.hex), mode: .read,
                          interval: .seconds(3600), writable: true, commandTTL: ttl),
            ChannelConfig(name: "serial", characteristic: BluetoothUUID("aaa2")!, codec: try Codec(.text), mode: .read,
                          interval: .seconds(3600), writable: true, commandTTL: ttl),
        ])
    }

    func session(_ config: DeviceConfig, adapterPowered: Bool = true) -> DeviceSession {
        gatt.session(config, recorder: recorder, adapter: FakeGATT.adapter(powered: adapterPowered))
    }

    func command(_ config: DeviceConfig, _ channel: String, _ verb: CommandVerb, _ payload: String) -> SessionInput {
        let channel = config.channels.first { $0.name == channel }!
        return .command(CommandRequest(channel: channel, verb: verb, payload: Array(payload.utf8),
                                       topic: "b/fake/\(channel.name)/\(verb.rawValue)"))
    }

    @Test func connectsSubscribesPublishesAndStops() async throws {
        let config = try device()
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { recorder.availability == [false, true] }
            gatt.notify([0x0a, 0x1b])
            try await eventually("value published") { recorder.payloads(on: "b/fake/n") == ["0a1b"] }
            try await eventually("read channel polled once") { recorder.payloads(on: "b/fake/led") == ["00"] }
            await session.stop()
            #expect(recorder.availability == [false, true, false])
            #expect(gatt.state.withLock { $0.disconnects } == 1, "stop disconnects and waits for it")
        }
    }

    @Test func reconnectsAfterFailedConnectsAndALinkLoss() async throws {
        gatt.state.withLock { $0.failConnects = 2 }
        let session = session(try device())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online after two failures") { recorder.availability.last == true }
            #expect(gatt.state.withLock { $0.connects } == 3)
            gatt.dropLink()
            try await eventually("offline, then online again") { recorder.availability == [false, true, false, true] }
            gatt.notify([0x01])
            try await eventually("values after the reconnection") { recorder.payloads(on: "b/fake/n") == ["01"] }
            await session.stop()
        }
    }

    @Test func commandsWaitForTheDeviceWithinTheirTTLInArrivalOrder() async throws {
        gatt.state.withLock { $0.failConnects = 1_000_000 }
        let config = try device(ttl: .seconds(30))
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            for payload in ["01", "02", "03"] { session.send(command(config, "led", .set, payload)) }
            try await eventually("connect attempts") { gatt.state.withLock { $0.connects } >= 2 }
            #expect(gatt.state.withLock { $0.writes }.isEmpty)
            gatt.state.withLock { $0.failConnects = 0 }
            try await eventually("all written") { gatt.state.withLock { $0.writes }.count == 3 }
            #expect(gatt.state.withLock { $0.writes } == [[1], [2], [3]])
            // A read-mode channel is read back after a write, so its state topic shows the new value.
            try await eventually("read back") { recorder.payloads(on: "b/fake/led").last == "03" }
            await session.stop()
        }
    }

    @Test func aCommandWhoseDeviceStaysAwayExpiresWithAReport() async throws {
        gatt.state.withLock { $0.failConnects = 1_000_000 }
        let config = try device(ttl: .milliseconds(100))
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            session.send(command(config, "led", .set, "01"))
            try await eventually("expired") { !recorder.rejections.isEmpty }
            #expect(recorder.rejections.first?.reason.contains("command_ttl") == true)
            #expect(recorder.rejections.first?.topic == "b/fake/led/set")
            await session.stop()
            #expect(gatt.state.withLock { $0.writes }.isEmpty)
        }
    }

    @Test func stopDropsQueuedCommandsWithAReport() async throws {
        gatt.state.withLock { $0.failConnects = 1_000_000 }
        let config = try device()
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            session.send(command(config, "led", .set, "01"))
            session.send(command(config, "led", .set, "zz"))          // bad payload: rejected at once
            try await eventually("bad payload rejected") { recorder.rejections.count == 1 }
            await session.stop()
            #expect(recorder.rejections.count == 2)
            #expect(recorder.rejections.last?.reason.contains("stopping") == true)
        }
    }

    @Test func aTextCommandCutByALinkLossIsNotResentFromTheStart() async throws {
        let config = try device()
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { recorder.availability.last == true }
            gatt.state.withLock { $0.writesBeforeLinkLoss = 1 }      // the first 20-byte chunk goes, then the link drops
            session.send(command(config, "serial", .set, String(repeating: "x", count: 50)))
            try await eventually("partial write reported") {
                recorder.rejections.contains { $0.reason.contains("partial write") }
            }
            gatt.state.withLock { $0.writesBeforeLinkLoss = nil }
            gatt.dropLink()
            try await eventually("back online") { recorder.availability.suffix(2) == [false, true] }
            #expect(gatt.state.withLock { $0.writes }.count == 1, "the command was not written again")
            await session.stop()
        }
    }

    @Test func theLatestAdapterFactWinsWhenLookupsAnswerOutOfOrder() async throws {
        let session = session(try device())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { recorder.availability.last == true }
            let done = gatt.state.withLock { s in
                s.lookupDelays = [.milliseconds(200), .zero]      // the "powered off" lookup answers last
                return s.lookupsDone
            }
            func adapter(_ powered: Bool) -> AdapterInfo {
                AdapterInfo(path: FakeGATT.adapterPath, properties: ["Powered": .bool(powered)])
            }
            session.send(.adapter(adapter(false)))
            session.send(.adapter(adapter(true)))
            try await eventually("both lookups answered") { gatt.state.withLock { $0.lookupsDone } >= done + 2 }
            // Drained through the inbox: a command round trip after the lookups proves their results were handled.
            session.send(command(try device(), "led", .set, "05"))
            try await eventually("written") { gatt.state.withLock { $0.writes }.contains([5]) }
            #expect(recorder.availability.last == true, "\(recorder.availability)")
            await session.stop()
        }
    }

    @Test func getIsRejectedWhileOfflineAndReadsWholeValuesWhenOnline() async throws {
        let config = try device()
        let session = session(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { recorder.availability.last == true }
            gatt.state.withLock { $0.value = Array("half line\n".utf8) }
            session.send(command(config, "serial", .get, ""))
            try await eventually("read published") { recorder.payloads(on: "b/fake/serial").contains("half line") }
            await session.stop()
            session.send(command(config, "serial", .get, ""))           // ignored: the loop has ended
        }
    }
}
