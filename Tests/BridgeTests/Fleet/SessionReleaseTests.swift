import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import Synchronization
import Testing
@testable import BridgeSession

/// A `DeviceSession` in a fleet, in process against `FakeGATT`: silent while another bridge owns the device, and a
/// release that is confirmed only once the device is disconnected (the next owner's connect must find it free).
@Suite struct SessionReleaseTests {
    let gatt = FakeGATT()
    let recorder = SessionRecorder()

    func session(owned: Bool, onReport: @escaping @Sendable (DeviceReport) -> Void = { _ in }) throws -> DeviceSession {
        gatt.session(try FakeGATT.oneChannelDevice(), recorder: recorder, owned: owned, onReport: onReport)
    }

    @Test func watchesSilentlyUntilOwnedThenReleasesAfterTheDisconnect() async throws {
        let gatt = self.gatt
        let disconnectsAtRelease = Mutex<Int?>(nil)
        let session = try session(owned: false) { report in
            if case .released = report { disconnectsAtRelease.withLock { $0 = gatt.state.withLock { $0.disconnects } } }
        }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            // A command for a device this bridge does not own never gets this far (the core drops it); a republish
            // (Home Assistant's birth) must not speak for it either.
            session.send(.republish(states: true))
            session.send(.machine(.ownership(true)))
            try await eventually("online once owned") { recorder.availability == [false, true] }
            #expect(gatt.state.withLock { $0.connects } == 1)
            session.send(.machine(.ownership(false)))
            try await eventually("released") { disconnectsAtRelease.withLock { $0 } != nil }
            #expect(disconnectsAtRelease.withLock { $0 } == 1, "the release follows the disconnect")
            #expect(recorder.availability == [false, true, false])
            session.send(.republish(states: true))
            await session.stop()
            #expect(recorder.availability == [false, true, false], "no availability once given up")
            #expect(gatt.state.withLock { $0.connects } == 1)
        }
    }
}

@Suite struct SessionUnseenTests {
    @Test func aDeviceBlueZDropsAfterASightingIsReportedUnseen() async throws {
        let t = SessionReleaseTests()
        let session = try t.session(owned: false)
        let info = try #require(DeviceInfo(path: FakeGATT.devicePath, properties: [
            "Address": .string(FakeGATT.address.description), "Adapter": .objectPath(FakeGATT.adapterPath),
            "RSSI": .int16(-61),
        ]))
        let louder = try #require(DeviceInfo(path: FakeGATT.devicePath, properties: [
            "Address": .string(FakeGATT.address.description), "Adapter": .objectPath(FakeGATT.adapterPath),
            "RSSI": .int16(-55),
        ]))
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            session.send(.device(.deviceChanged(info, changed: ["RSSI"])))
            session.send(.device(.deviceRemoved(path: FakeGATT.devicePath, address: FakeGATT.address)))
            // Heard again after BlueZ dropped it: a sighting even with the same value (a fleet's claim needs one; the
            // bench's BlueZoo reports a fixed RSSI), and a new value is one too.
            session.send(.device(.deviceChanged(info, changed: ["RSSI"])))
            session.send(.device(.deviceChanged(louder, changed: ["RSSI"])))
            try await eventually("heard again") {
                t.recorder.reports.withLock { $0.filter { if case .rssi = $0 { true } else { false } }.count } == 3
            }
            await session.stop()
            let kinds = t.recorder.reports.withLock { reports in
                reports.compactMap { report -> String? in
                    switch report {
                    case .rssi(let value): "rssi \(value)"
                    case .unseen: "unseen"
                    default: nil
                    }
                }
            }
            #expect(kinds == ["rssi -61", "unseen", "rssi -61", "rssi -55"])
        }
    }
}
