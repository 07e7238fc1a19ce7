import BridgeSession
import Synchronization

/// Discovery for the sessions of devices with `adapter: any` (docs/adapters.md). A session looks for its missing device
/// through the adapter it is placed on; if that adapter has not found it within `widenAfter`, every usable adapter
/// joins the search, so a device that only another adapter hears is sighted there and the core moves it
/// (`AdapterMachine.sighted`). Without this a device placed on the wrong radio would wait for that radio to fail
/// before anyone else listened for it. The placed adapter gets a head start so that a device it hears stays on it,
/// rather than going to whichever radio (on a bench, perhaps a peripheral's own adapter) answers first. Pinned
/// devices use the plain coordinator and look only through their own adapter.
///
/// The calls into the coordinator are made under the lock, so a session's want/release and the core's adapter
/// updates reach it in the order they happened (the coordinator only queues them; nothing here blocks). The delay
/// runs wherever `schedule` puts it (the core: a job in its adapter task group).
package final class AnyAdapterDiscovery: DiscoveryControl, Sendable {
    static let widenAfter: Duration = .seconds(10)

    private struct Want {
        /// The adapter the session asked for.
        var asked: String
        /// Whether every usable adapter listens for it too.
        var widened = false
        var token: UInt64
    }

    private struct State {
        /// Object paths of the adapters that may join a search (present, powered, healthy).
        var adapters: Set<String> = []
        var wanted: [String: Want] = [:]
        var nextToken: UInt64 = 0
    }

    private let inner: any DiscoveryControl
    private let schedule: @Sendable (Duration, @escaping @Sendable () -> Void) -> Void
    private let state = Mutex(State())

    /// `schedule(delay, body)` runs `body` after `delay` (or never, at shutdown).
    package init(inner: any DiscoveryControl,
         schedule: @escaping @Sendable (Duration, @escaping @Sendable () -> Void) -> Void) {
        self.inner = inner
        self.schedule = schedule
    }

    package func want(_ device: String, adapter: String) {
        let token: UInt64 = state.withLock { s in
            if let previous = s.wanted[device] { stopListening(previous, device, except: adapter, &s) }
            s.nextToken &+= 1
            s.wanted[device] = Want(asked: adapter, token: s.nextToken)
            inner.want(device, adapter: adapter)
            return s.nextToken
        }
        schedule(Self.widenAfter) { [weak self] in self?.widen(device, token: token) }
    }

    package func release(_ device: String, adapter: String) {
        state.withLock { s in
            if let previous = s.wanted.removeValue(forKey: device) { stopListening(previous, device, except: nil, &s) }
            inner.release(device, adapter: adapter)
        }
    }

    /// The adapters that may join a search changed: widened searches start or stop listening through them.
    package func setAdapters(_ paths: Set<String>) {
        state.withLock { s in
            guard paths != s.adapters else { return }
            let added = paths.subtracting(s.adapters), removed = s.adapters.subtracting(paths)
            s.adapters = paths
            for (device, want) in s.wanted where want.widened {
                for path in added { inner.want(device, adapter: path) }
                for path in removed where path != want.asked { inner.release(device, adapter: path) }
            }
        }
    }

    /// The placed adapter had its head start: every usable adapter listens for the device too.
    func widen(_ device: String, token: UInt64) {
        state.withLock { s in
            guard var want = s.wanted[device], want.token == token, !want.widened else { return }
            want.widened = true
            s.wanted[device] = want
            for path in s.adapters where path != want.asked { inner.want(device, adapter: path) }
        }
    }

    private func stopListening(_ want: Want, _ device: String, except keep: String?, _ s: inout State) {
        var paths: Set<String> = [want.asked]
        if want.widened { paths.formUnion(s.adapters) }
        for path in paths where path != keep { inner.release(device, adapter: path) }
    }
}
