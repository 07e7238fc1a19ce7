import BlueZ
import BridgeAdapters
import BridgeSession
import Logging

/// Work the core's loop hands off because it takes time: reading BlueZ's adapters, a timer, a recovery step,
/// stopping sessions. Each runs as a task beside the loop (`BridgeCore.run`) and posts its result back to the inbox,
/// so the loop never waits for BlueZ and sees every result in order with the other inputs.
struct CoreJobs: Sendable {
    let queue: AsyncStream<Job>.Continuation
    let sink: AsyncStream<CoreInput>.Continuation
    let bluez: any BluetoothPort
    let discovery: any DiscoveryPort
    let logger: Logger

    func readAdapters() {
        let bluez = self.bluez, sink = self.sink
        queue.yield { sink.yield(.adaptersRead(await bluez.adapters())) }
    }

    /// Feeds `.tick(adapter)` at `instant`.
    func wake(_ adapter: String, at instant: ContinuousClock.Instant) {
        let sink = self.sink
        queue.yield {
            try? await Task.sleep(until: instant, clock: .continuous)
            if !Task.isCancelled { sink.yield(.adapter(.tick(adapter: adapter))) }
        }
    }

    /// Stops the sessions a change takes away, then feeds `.sessionsStopped(id)`.
    func stop(_ sessions: [DeviceSession], change id: CoreMachine.ChangeID) {
        let sink = self.sink
        queue.yield {
            await withDiscardingTaskGroup { group in
                for session in sessions { group.addTask { await session.stop() } }
            }
            sink.yield(.sessionsStopped(id))
        }
    }

    /// A recovery step on a wedged adapter (docs/adapters.md) at `path` (nil: it is gone); feeds `.stepFinished`.
    func recover(_ step: AdapterHealthMachine.Step, adapter: String, path: String?) {
        let sink = self.sink
        guard let path else {
            sink.yield(.adapter(.stepFinished(adapter: adapter, step, ok: false, error: "adapter gone")))
            return
        }
        logger.warning("adapter \(adapter) wedged; recovery step \(step.rawValue)")
        let bluez = self.bluez, discovery = self.discovery
        queue.yield {
            var error: String?
            switch step {
            case .restartDiscovery:
                error = await discovery.restart(adapter: path)
            case .powerCycle:
                do throws(BlueZError) {
                    try await bluez.setPowered(false, adapter: path, timeout: .seconds(10))
                    try await bluez.setPowered(true, adapter: path, timeout: .seconds(10))
                } catch let failure {
                    error = "power cycle: \(failure)"
                }
            }
            sink.yield(.adapter(.stepFinished(adapter: adapter, step, ok: error == nil, error: error)))
        }
    }
}
