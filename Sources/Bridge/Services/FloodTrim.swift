import Synchronization
import Systemd

/// After a flood, the heap's free pages go back to the kernel (`HeapTrim`, docs/dev/MEMORY.md "After a flood").
///
/// The MQTT pump calls `noteDrop` for every message the client dropped because the bridge was too far behind; `run`
/// trims once no such drop has come for `quiet`, so a flood costs one trim after it, not one per message, and a
/// bridge that never floods never trims here.
final class FloodTrim: Sendable {
    let quiet: Duration
    private let lastDrop = Mutex<ContinuousClock.Instant?>(nil)
    private let signal: AsyncStream<Void>.Continuation
    private let signals: AsyncStream<Void>

    init(quiet: Duration = .seconds(5)) {
        self.quiet = quiet
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func noteDrop() {
        lastDrop.withLock { $0 = .now }
        signal.yield()
    }

    /// No more drops will come (the client is gone): `run` returns.
    func finish() {
        signal.finish()
    }

    /// Until `finish`: after each flood, waits out the quiet and trims. `trimmed` is told how it went (a log line).
    func run(trimmed: @Sendable (Bool) -> Void = { _ in }) async {
        for await _ in signals {
            while let last = lastDrop.withLock({ $0 }) {
                guard (try? await Task.sleep(until: last + quiet, clock: .continuous)) != nil else { return }
                // A drop during the wait moves the deadline; the flood is over once none has.
                let over = lastDrop.withLock { current -> Bool in
                    guard current == last else { return false }
                    current = nil
                    return true
                }
                if over {
                    trimmed(HeapTrim.release())
                    break
                }
            }
        }
    }
}
