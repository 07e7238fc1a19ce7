import BlueZ
import BridgeSession
import Logging
import ServiceLifecycle

/// BlueZ has one discovery session per client and adapter, but several device sessions may be looking for their device
/// at once: this counts who wants discovery, starts it on the first request and stops it after the last. Requests are
/// applied strictly in the order they were made (one consumer task), so a quick want/release pair cannot be reordered
/// into a discovery left running. Requests made before `run()` starts wait for it.
public final class DiscoveryCoordinator: DiscoveryControl, Service {
    private enum Request: Sendable {
        case want(String, adapter: String), release(String, adapter: String), reset
        /// Passive broadcasts (docs/adverts.md) need every advertisement reported, not only the first of each device:
        /// discovery running with the other filter is restarted with this one.
        case reportRepeats(Bool)
        /// A recovery step (docs/adapters.md): stop and start discovery on the adapter, answering with the error, if any.
        case restart(adapter: String, done: @Sendable (String?) -> Void)
    }
    /// Every StartDiscovery's result (adapter path, error or nil), for the adapters' health; one consumer (the core).
    public let outcomes: AsyncStream<(adapter: String, error: String?)>
    private let outcome: AsyncStream<(adapter: String, error: String?)>.Continuation
    private let requests: AsyncStream<Request>.Continuation
    private let stream: AsyncStream<Request>
    private let bluez: BlueZClient
    private let logger: Logger

    public init(bluez: BlueZClient, logger: Logger) {
        (stream, requests) = AsyncStream.makeStream(of: Request.self)
        (outcomes, outcome) = AsyncStream.makeStream(of: (adapter: String, error: String?).self,
                                                     bufferingPolicy: .bufferingNewest(256))
        self.bluez = bluez
        self.logger = logger
    }

    /// Serves requests until graceful shutdown (the sessions that made them have stopped by then).
    public func run() async {
        let bluez = self.bluez, logger = self.logger, stream = self.stream, outcome = self.outcome
        defer { outcome.finish() }
        await cancelWhenGracefulShutdown {
            var interested: [String: Set<String>] = [:]   // adapter path → device names
            var running: Set<String> = []
            var repeats = false
            for await request in stream {
                var adapters: [String]
                switch request {
                case .reportRepeats(let on):
                    guard on != repeats else { continue }
                    repeats = on
                    for adapter in running { try? await bluez.stopDiscovery(adapter: adapter) }
                    adapters = Array(running)
                    running.removeAll()
                case .want(let device, let adapter):
                    interested[adapter, default: []].insert(device)
                    adapters = [adapter]
                case .release(let device, let adapter):
                    interested[adapter]?.remove(device)
                    adapters = [adapter]
                case .reset:
                    running.removeAll()
                    adapters = Array(interested.keys)
                case .restart(let adapter, let done):
                    if running.remove(adapter) != nil { try? await bluez.stopDiscovery(adapter: adapter) }
                    do {
                        try await bluez.startDiscovery(adapter: adapter, filter: DiscoveryFilter(transport: .le, duplicateData: repeats))
                        running.insert(adapter)
                        done(nil)
                    } catch {
                        done("\(error)")
                    }
                    // Stopped again below when nobody wants it: the restart itself was the probe.
                    adapters = [adapter]
                }
                for adapter in adapters {
                    let wanted = !(interested[adapter]?.isEmpty ?? true)
                    if wanted && !running.contains(adapter) {
                        do {
                            try await bluez.startDiscovery(adapter: adapter, filter: DiscoveryFilter(transport: .le, duplicateData: repeats))
                            running.insert(adapter)
                            outcome.yield((adapter, nil))
                            logger.debug("discovery started", metadata: ["adapter": "\(adapter)"])
                        } catch {
                            outcome.yield((adapter, "\(error)"))
                            logger.warning("could not start discovery: \(error)", metadata: ["adapter": "\(adapter)"])
                        }
                    } else if !wanted && running.contains(adapter) {
                        running.remove(adapter)
                        do {
                            try await bluez.stopDiscovery(adapter: adapter)
                            logger.debug("discovery stopped", metadata: ["adapter": "\(adapter)"])
                        } catch {
                            logger.debug("could not stop discovery: \(error)", metadata: ["adapter": "\(adapter)"])
                        }
                    }
                }
            }
        }
    }

    public func want(_ device: String, adapter: String) { requests.yield(.want(device, adapter: adapter)) }
    public func release(_ device: String, adapter: String) { requests.yield(.release(device, adapter: adapter)) }
    public func reportRepeats(_ on: Bool) { requests.yield(.reportRepeats(on)) }
    /// bluetoothd restarted or the adapter came back: discovery it ran is gone; start again for whoever still waits.
    public func reset() { requests.yield(.reset) }

    /// Restarts discovery on the adapter (a recovery step); returns the error, or nil when it started.
    public func restart(adapter: String) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let request = Request.restart(adapter: adapter, done: { continuation.resume(returning: $0) })
            if case .terminated = requests.yield(request) { continuation.resume(returning: "bridge stopping") }
        }
    }
}
