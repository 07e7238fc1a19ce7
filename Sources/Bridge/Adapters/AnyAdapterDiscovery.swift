import Synchronization

/// Discovery for the sessions of devices with `adapter: any` (SPEC §8). While such a session looks for its device,
/// every usable adapter looks, not only the one the device is placed on: a device that only another adapter hears
/// is then sighted there, and the core moves it (`BridgeCore.noteSighting`). Without this a device placed on the
/// wrong radio would wait for that radio to fail before anyone else listened for it. Pinned devices use the plain
/// coordinator and look only through their own adapter.
///
/// The calls into the coordinator are made under the lock, so a session's want/release and the core's adapter
/// updates reach it in the order they happened (the coordinator only queues them; nothing here blocks).
final class AnyAdapterDiscovery: DiscoveryControl, Sendable {
    private struct State {
        /// Object paths of the adapters that listen for missing devices (present, powered, healthy).
        var adapters: Set<String> = []
        /// Device → the adapter its session asked for (and so also listens through, whatever `adapters` says).
        var wanted: [String: String] = [:]
    }

    private let inner: any DiscoveryControl
    private let state = Mutex(State())

    init(inner: any DiscoveryControl) {
        self.inner = inner
    }

    func want(_ device: String, adapter: String) {
        state.withLock { s in
            if let previous = s.wanted[device], previous != adapter, !s.adapters.contains(previous) {
                inner.release(device, adapter: previous)
            }
            s.wanted[device] = adapter
            for path in s.adapters.union([adapter]) { inner.want(device, adapter: path) }
        }
    }

    func release(_ device: String, adapter: String) {
        state.withLock { s in
            let asked = s.wanted.removeValue(forKey: device)
            for path in s.adapters.union([adapter]).union(asked.map { [$0] } ?? []) {
                inner.release(device, adapter: path)
            }
        }
    }

    /// The adapters that should listen changed: devices being looked for start or stop listening through them.
    func setAdapters(_ paths: Set<String>) {
        state.withLock { s in
            guard paths != s.adapters else { return }
            let added = paths.subtracting(s.adapters), removed = s.adapters.subtracting(paths)
            s.adapters = paths
            for (device, asked) in s.wanted {
                for path in added { inner.want(device, adapter: path) }
                for path in removed where path != asked { inner.release(device, adapter: path) }
            }
        }
    }
}
