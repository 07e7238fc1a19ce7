/// The order of a session's cleanups (Disconnect, RemoveDevice) and the work that must come after them: a Connect
/// or a device lookup that overtook a Disconnect would be cancelled by it, so each waits for every cleanup asked for
/// before it. Cleanups run one after another on their own task (`DeviceSession`), which reports each one done.
struct CleanupOrder: Sendable {
    private(set) var asked: UInt64 = 0
    private(set) var done: UInt64 = 0
    private var waiting: [(ticket: UInt64, job: Job)] = []

    var allDone: Bool { done == asked }

    /// A cleanup is queued: its ticket.
    mutating func ask() -> UInt64 {
        asked += 1
        return asked
    }

    /// `job` if it may run now, else nil: it waits for the cleanups asked for so far.
    mutating func after(_ job: @escaping Job) -> Job? {
        guard !allDone else { return job }
        waiting.append((asked, job))
        return nil
    }

    /// The cleanup with `ticket` (and every one before it) is done: the jobs that waited for them.
    mutating func done(_ ticket: UInt64) -> [Job] {
        done = ticket
        let ready = waiting.filter { $0.ticket <= ticket }
        waiting.removeAll { $0.ticket <= ticket }
        return ready.map(\.job)
    }
}
