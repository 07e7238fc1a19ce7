import Synchronization
import Testing
@testable import BridgeAdapters
@testable import BridgeSession

@Suite struct AnyAdapterDiscoveryTests {
    /// Keeps what the coordinator would: who wants discovery on which adapter.
    final class Recorder: DiscoveryControl, Sendable {
        let interested = Mutex<[String: Set<String>]>([:])
        func want(_ device: String, adapter: String) { interested.withLock { _ = $0[adapter, default: []].insert(device) } }
        func release(_ device: String, adapter: String) { interested.withLock { _ = $0[adapter]?.remove(device) } }
        var listening: Set<String> { interested.withLock { Set($0.filter { !$0.value.isEmpty }.keys) } }
    }

    /// Delayed work the test runs by hand, so "the head start ran out" is a step, not a sleep.
    final class Timers: Sendable {
        let pending = Mutex<[@Sendable () -> Void]>([])
        func schedule(_ delay: Duration, _ body: @escaping @Sendable () -> Void) { pending.withLock { $0.append(body) } }
        func fire() { for body in pending.withLock({ p in defer { p = [] }; return p }) { body() } }
        func fireOldest() { pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }?() }
    }

    let recorder = Recorder()
    let timers = Timers()

    func discovery() -> AnyAdapterDiscovery {
        let timers = self.timers
        return AnyAdapterDiscovery(inner: recorder, schedule: { timers.schedule($0, $1) })
    }

    @Test func thePlacedAdapterLooksFirstThenEveryUsableOne() {
        let discovery = discovery()
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.listening == ["/org/bluez/hci0"])
        timers.fire()
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.release("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.listening.isEmpty)
    }

    @Test func aDeviceFoundWithinItsHeadStartNeverWidens() {
        let discovery = discovery()
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        discovery.release("strap", adapter: "/org/bluez/hci0")     // found before the head start ran out
        discovery.want("strap", adapter: "/org/bluez/hci0")        // lost again: a new head start
        timers.fireOldest()                                        // the first search's timer: stale
        #expect(recorder.listening == ["/org/bluez/hci0"])
        timers.fireOldest()                                        // the current search's own timer
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
    }

    @Test func adaptersThatComeAndGoJoinAndLeaveAWidenedSearch() {
        let discovery = discovery()
        discovery.setAdapters(["/org/bluez/hci0"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        timers.fire()
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        // hci0 powered off: it leaves the search, except that the session's own adapter stays asked for until the
        // session itself moves.
        discovery.setAdapters(["/org/bluez/hci1"])
        #expect(recorder.listening == ["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci1")
        #expect(recorder.listening == ["/org/bluez/hci1"])
    }

    @Test func aFoundDeviceReleasesEveryAdapterAndOthersKeepTheirs() {
        let discovery = discovery()
        discovery.setAdapters(["/org/bluez/hci0", "/org/bluez/hci1"])
        discovery.want("strap", adapter: "/org/bluez/hci0")
        discovery.want("lamp", adapter: "/org/bluez/hci1")
        timers.fire()
        discovery.release("strap", adapter: "/org/bluez/hci0")
        #expect(recorder.interested.withLock { $0 } == ["/org/bluez/hci0": ["lamp"], "/org/bluez/hci1": ["lamp"]])
    }
}
