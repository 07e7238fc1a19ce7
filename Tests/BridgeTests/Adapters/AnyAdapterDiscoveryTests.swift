import Synchronization
import Testing
@testable import Bridge

@Suite struct AnyAdapterDiscoveryTests {
    /// Keeps what the coordinator would: who wants discovery on which adapter.
    final class Recorder: DiscoveryControl, Sendable {
        let interested = Mutex<[String: Set<String>]>([:])
        func want(_ device: String, adapter: String) { interested.withLock { _ = $0[adapter, default: []].insert(device) } }
        func release(_ device: String, adapter: String) { interested.withLock { _ = $0[adapter]?.remove(device) } }
        var listening: Set<String> { interested.withLock { Set($0.filter { !$0.value.isEmpty }.keys) } }
    }

    @Test func aMissingDeviceIsLookedForThroughEveryUsableAdapter() {
        let recorder = Recorder()
        let discovery = AnyAdapterDiscovery(inner: recorder)
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.release("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.listening.isEmpty)
    }

    @Test func adaptersThatComeAndGoJoinAndLeaveTheSearch() {
        let recorder = Recorder()
        let discovery = AnyAdapterDiscovery(inner: recorder)
        discovery.setAdapters(["/org/bluez/hci0"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        // hci0 powered off: it stops listening, except that the session's own adapter stays asked for until the
        // session itself moves (its release comes then).
        discovery.setAdapters(["/org/bluez/hci1"])
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci1")
        #expect(recorder.listening == ["/org/bluez/hci1"])
    }

    @Test func aFoundDeviceReleasesEveryAdapterAndOthersKeepTheirs() {
        let recorder = Recorder()
        let discovery = AnyAdapterDiscovery(inner: recorder)
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        discovery.want("lamp", adapter: "/org/bluez/hci1")
        discovery.release("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.interested.withLock { $0 } == ["/org/bluez/hci0": ["lamp"], "/org/bluez/hci1": ["lamp"]])
    }
}
