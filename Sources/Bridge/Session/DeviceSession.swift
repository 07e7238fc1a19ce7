import BlueZ
import BridgeChannels
import Config
import Logging
import Synchronization

/// One saved device. `run()` owns everything about it: a `SessionMachine` (the link's life), a `CommandScheduler`
/// (its commands), and the work they ask for, started as child tasks whose results come back through the same inbox
/// as every other input. Nothing outlives `run()`: when it returns, every child has ended.
///
/// The handle itself is shared (the core sends inputs through it); the state lives in a `SessionLoop` that only
/// `run()` touches.
public final class DeviceSession: Sendable {
    public let config: DeviceConfig
    private let environment: SessionEnvironment
    private let publishers: [String: ChannelPublisher]
    private let inbox: AsyncStream<SessionInput>
    private let sender: AsyncStream<SessionInput>.Continuation
    private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// `adapter` and `bluezAvailable` are the facts at creation; they are the first inputs, ahead of anything the
    /// core sends later.
    package init(config: DeviceConfig, environment: SessionEnvironment, adapter: AdapterInfo?, bluezAvailable: Bool,
         owned: Bool = true) {
        self.config = config
        self.environment = environment
        publishers = SessionLoop.publishers(config, environment)
        (inbox, sender) = AsyncStream.makeStream(of: SessionInput.self)
        if !owned { sender.yield(.machine(.ownership(false))) }    // fleet: before start, so it never says offline
        sender.yield(.machine(.start))
        sender.yield(bluezAvailable ? .adapter(adapter) : .bluez(available: false))
    }

    /// Each channel's last published value, in config order (a channel with none yet is left out); any thread.
    public func latestValues() -> [(channel: String, payload: String)] {
        config.channels.compactMap { channel in publishers[channel.name]?.lastPayload.map { (channel.name, $0) } }
    }

    // MARK: - Inputs (any thread)

    package func send(_ input: SessionInput) {
        sender.yield(input)
    }

    /// Asks the session to stop (offline, disconnect, drop its commands with a report) and waits until `run()` ended.
    package func stop() async {
        send(.stop)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = finished.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    // MARK: - The loop

    /// Runs until stopped.
    package func run() async {
        let (cleanups, cleanupSender) = AsyncStream.makeStream(of: (UInt64, Job).self)
        let inbox = self.inbox
        let sender = self.sender
        await withDiscardingTaskGroup { outer in
            // Disconnect and RemoveDevice run strictly in order on their own child, which outlives the loop so a
            // stop's disconnect completes before `run()` returns; anything that must follow them waits for its ticket.
            outer.addTask {
                for await (ticket, job) in cleanups {
                    await job()
                    sender.yield(.cleanupDone(ticket))
                }
            }
            await withDiscardingTaskGroup { group in
                var loop = SessionLoop(config: config, environment: environment, publishers: publishers, inbox: sender,
                                       cleanups: cleanupSender)
                for await input in inbox {
                    for job in loop.handle(input) { group.addTask(operation: job) }
                    if loop.isFinished { break }
                }
                // Timers, pollers, reads and subscription pumps end here; the cleanup child drains on its own.
                group.cancelAll()
            }
            cleanupSender.finish()
        }
        sender.finish()
        let waiters = finished.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

package typealias Job = @Sendable () async -> Void
