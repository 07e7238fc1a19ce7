import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import Testing
@testable import BridgeSession

/// A session told to use another adapter (docs/adapters.md failover) and what it reports for the adapters' health.
@Suite struct SessionAdapterTests {
    let gatt = FakeGATT()
    let recorder = SessionRecorder()

    func adapter(_ name: String) -> AdapterInfo {
        AdapterInfo(path: "/org/bluez/\(name)", properties: ["Powered": .bool(true)])
    }

    func session() throws -> DeviceSession {
        gatt.session(try FakeGATT.oneChannelDevice(), recorder: recorder, adapter: adapter("hci0"))
    }

    var operations: [(adapter: String, error: String?)] {
        recorder.reports.withLock { reports in
            reports.compactMap { if case .adapterOperation(let adapter, let error) = $0 { (adapter, error) } else { nil } }
        }
    }

    @Test func movedToAnotherAdapterItReconnectsThroughIt() async throws {
        let session = try session()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online through hci0") { recorder.availability == [false, true] }
            session.send(.adapter(adapter("hci1")))
            try await eventually("offline, then online through hci1") { recorder.availability == [false, true, false, true] }
            #expect(operations.map(\.adapter) == ["/org/bluez/hci0", "/org/bluez/hci1"])
            #expect(operations.allSatisfy { $0.error == nil })
            #expect(gatt.state.withLock { $0.disconnects } == 1, "the old adapter's link (or pending connect) is cut")
            await session.stop()
        }
    }

    @Test func aDeviceThatIsAwayDoesNotCountAgainstItsAdapter() async throws {
        gatt.state.withLock { $0.failConnects = 2 }       // page timeouts: the device, not the radio
        let session = try session()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online after two failures") { recorder.availability.last == true }
            #expect(operations.map(\.error) == [nil])
            await session.stop()
        }
    }

    @Test func theStandardPolicyBlamesTheAdapterOnlyForABusyOrSilentController() {
        let suspects = ReconnectPolicy.standard.adapterFailures
        #expect(suspects.contains(FailureKind.inProgress.category))
        #expect(suspects.contains(FailureKind.noReply.category))
        #expect(!suspects.contains(FailureKind.connectTimeout.category))
        #expect(!suspects.contains(FailureKind.connectAbortedLocally.category))
        #expect(!suspects.contains(FailureKind.connectFailed("br-connection-page-timeout").category))
    }
}
