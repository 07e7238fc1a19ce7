import BridgeModel

/// The order in which one device's commands are carried out (docs/mqtt.md, §6), as a value: the session feeds it commands,
/// the link's state and the outcomes of writes, and it says what to run next and what to report. No I/O, no clock of
/// its own: the caller passes `now`, so every rule is tested by driving it directly.
///
/// Rules:
/// - commands run one at a time, in arrival order; a command's `command_ttl` is checked again right before it runs;
/// - at most one `get` per channel is pending: later ones join it (their reply targets are answered with it);
/// - a command whose write failed because the link went runs first after the reconnection, within its ttl, unless some
///   of it (text chunks) was already written: that one is reported as a partial write, never resent from the start;
/// - after a link loss nothing runs until the link is up again (writing at once would only fail again, as fast as
///   BlueZ answers);
/// - the queue is bounded: when full, the oldest waiting command is dropped and reported.
public struct CommandScheduler: Sendable {
    public enum Verdict: Sendable, Hashable {
        case rejected(DeviceCommand, reason: String)
        case completed(DeviceCommand)
    }

    /// How a command's execution ended.
    public enum Outcome: Sendable, Hashable {
        case done
        /// The link went; `partial` when some of the command had already been written.
        case linkLost(partial: Bool)
        case failed(String)
    }

    public let capacity: Int
    public private(set) var waiting: [DeviceCommand] = []
    public private(set) var running: DeviceCommand?
    /// A command whose write the link interrupted before any of it went out: it goes first once the link is back.
    public private(set) var retryHead: DeviceCommand?
    /// Set by a link loss until the next `linkUp()`.
    public private(set) var held = false
    /// Counts `linkUp()`s, so a failure reported after a reconnection already happened does not hold the queue
    /// until yet another one.
    private var linkEpoch = 0
    private var runningEpoch = 0

    public init(capacity: Int = 100) {
        self.capacity = max(1, capacity)
    }

    public var isIdle: Bool { waiting.isEmpty && running == nil && retryHead == nil }
    public var pendingCount: Int { waiting.count + (retryHead == nil ? 0 : 1) }

    /// The earliest deadline among the commands not yet running: when the caller should next call `next`.
    public var nextDeadline: ContinuousClock.Instant? {
        (waiting.map(\.deadline) + [retryHead?.deadline].compactMap { $0 }).min()
    }

    /// Accepts a command. A `get` for a channel that already has one pending (waiting or running) joins it.
    public mutating func submit(_ command: DeviceCommand) -> [Verdict] {
        if command.isGet {
            if let running, running.isGet, running.channel == command.channel {
                self.running?.replies += command.replies
                return []
            }
            if let index = waiting.firstIndex(where: { $0.isGet && $0.channel == command.channel }) {
                waiting[index].replies += command.replies
                return []
            }
        }
        var out: [Verdict] = []
        if waiting.count >= capacity {
            let dropped = waiting.removeFirst()
            out.append(.rejected(dropped, reason: "too many commands waiting for the device; oldest dropped"))
        }
        waiting.append(command)
        return out
    }

    /// The command to run now, if any, and the commands that expired meanwhile. `online`: the device can take GATT
    /// operations. The returned command is `running` until `finish`.
    public mutating func next(now: ContinuousClock.Instant, online: Bool) -> (run: DeviceCommand?, expired: [Verdict]) {
        var out: [Verdict] = []
        if let head = retryHead, head.isExpired(at: now) {
            retryHead = nil
            out.append(.rejected(head, reason: Self.expiredReason))
        }
        let expired = waiting.filter { $0.isExpired(at: now) }
        if !expired.isEmpty {
            waiting.removeAll { $0.isExpired(at: now) }
            out += expired.map { .rejected($0, reason: Self.expiredReason) }
        }
        guard running == nil, online, !held else { return (nil, out) }
        if let head = retryHead {
            retryHead = nil
            running = head
        } else if !waiting.isEmpty {
            running = waiting.removeFirst()
        }
        runningEpoch = linkEpoch
        return (running, out)
    }

    /// The running command ended.
    public mutating func finish(_ id: UInt64, _ outcome: Outcome) -> [Verdict] {
        guard let command = running, command.id == id else { return [] }
        running = nil
        switch outcome {
        case .done:
            return [.completed(command)]
        case .linkLost(partial: true):
            return [.rejected(command, reason: "partial write: the link dropped after part of the text was written; not resent")]
        case .linkLost(partial: false):
            retryHead = command
            if runningEpoch == linkEpoch { held = true }
            return []
        case .failed(let message):
            return [.rejected(command, reason: message)]
        }
    }

    /// The link is up (again): held commands may run.
    public mutating func linkUp() {
        linkEpoch += 1
        held = false
    }

    /// Empties the scheduler (device removed, bridge stopping). The running command, if any, is not included: its
    /// outcome is reported when it ends.
    public mutating func drain(reason: String) -> [Verdict] {
        let all = [retryHead].compactMap { $0 } + waiting
        retryHead = nil
        waiting.removeAll()
        return all.map { .rejected($0, reason: reason) }
    }

    static let expiredReason = "the device stayed offline for command_ttl; command dropped"
}
