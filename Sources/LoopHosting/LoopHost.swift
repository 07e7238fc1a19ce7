import Glibc
import Synchronization

/// The thread whose `poll` loop drives a server (the web page's, the ESPHome API's): in the daemon the D-Bus event
/// loop (Bridge's `EventLoopHost`), so requests are answered where the bridge's state is written, with no thread of
/// the server's own; in tests and tools a `ThreadLoopHost`. Every call into the server's C library or sockets is
/// made on this thread.
public protocol LoopHost: Sendable {
    /// On the host's thread, from now on: `interest` before every `poll`, `serve` after it with the descriptor's
    /// `revents` (0 when only the deadline passed), until `serve` returns false. Neither blocks.
    func attach(interest: @escaping @Sendable () -> LoopInterest, serve: @escaping @Sendable (Int16) -> Bool)
    /// From any thread: runs `work` on the host's thread soon, in FIFO order with other such work, and makes the
    /// host ask `interest` again before it next sleeps. From the host's thread too (then on a later turn).
    func execute(_ work: @escaping @Sendable () -> Void)
    var isHostThread: Bool { get }
}

/// What a server waits for in the host's next `poll`.
public struct LoopInterest: Sendable, Equatable {
    /// The server's one descriptor, typically an epoll set holding its listening socket and every connection; −1
    /// for none.
    public var fd: Int32
    public var events: Int16
    /// CLOCK_MONOTONIC nanoseconds from which `serve` runs even if the descriptor is not ready; `.max` for never:
    /// a server with no client connected has no timeout, and costs no wake-up.
    public var deadline: Int64

    public init(fd: Int32, events: Int16, deadline: Int64) {
        self.fd = fd
        self.events = events
        self.deadline = deadline
    }
}

/// A thread with a `poll` loop of its own, for tests and tools that have no D-Bus loop. Runs until `shutdown()`.
public final class ThreadLoopHost: LoopHost, @unchecked Sendable {
    private struct Source {
        var interest: @Sendable () -> LoopInterest
        var serve: @Sendable (Int16) -> Bool
    }

    /// A pipe's read and write ends: a byte written wakes the `poll` (Glibc's module has no `eventfd`).
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let work = Mutex<[@Sendable () -> Void]>([])
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let joined = Mutex<Bool>(false)

    // Host-thread only (the thread's own loop and the work it runs), hence the `@unchecked Sendable`.
    @exclusivity(unchecked) private var _sources: [Source] = []

    private var sources: [Source] {
        _read { precondition(isHostThread, "ThreadLoopHost.sources off its thread"); yield _sources }
        _modify { precondition(isHostThread, "ThreadLoopHost.sources off its thread"); yield &_sources }
    }

    public init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe failed: errno \(errno)")
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = ends[0]
        wakeWriteFD = ends[1]
        var tid = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&tid, nil, { context in
            let host = Unmanaged<ThreadLoopHost>.fromOpaque(context!).takeRetainedValue()
            host.threadID.store(UInt(pthread_self()), ordering: .releasing)
            host.run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        threadID.store(UInt(tid), ordering: .releasing)
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    public func attach(interest: @escaping @Sendable () -> LoopInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        let source = Source(interest: interest, serve: serve)
        execute { self.sources.append(source) }
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        self.work.withLock { $0.append(work) }
        wake()
    }

    public var isHostThread: Bool {
        pthread_equal(pthread_self(), pthread_t(threadID.load(ordering: .acquiring))) != 0
    }

    /// Ends the thread (after the work queued before) and waits for it; the sources are dropped without a last
    /// `serve`, so stop the servers first. Not from the host's own thread.
    public func shutdown() {
        precondition(!isHostThread, "ThreadLoopHost.shutdown on its own thread")
        let first = joined.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        stopRequested.store(true, ordering: .releasing)
        wake()
        pthread_join(pthread_t(threadID.load(ordering: .acquiring)), nil)
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeWriteFD, &one, 1)
    }

    private func run() {
        var fds: [pollfd] = []
        var deadlines: [Int64] = []
        while !stopRequested.load(ordering: .acquiring) {
            for item in work.withLock({ queued in defer { queued.removeAll() }; return queued }) { item() }
            if stopRequested.load(ordering: .acquiring) { break }

            fds.removeAll(keepingCapacity: true)
            deadlines.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            var earliest = Int64.max
            for source in sources {
                let interest = source.interest()
                fds.append(pollfd(fd: interest.fd, events: interest.fd >= 0 ? interest.events : 0, revents: 0))
                deadlines.append(interest.deadline)
                earliest = min(earliest, interest.deadline)
            }
            let timeout: Int32 = earliest == .max
                ? -1 : Int32(clamping: max(0, (earliest - monotonicNanoseconds() + 999_999) / 1_000_000))
            if poll(&fds, nfds_t(fds.count), timeout) < 0 {
                precondition(errno == EINTR, "poll failed: errno \(errno)")
                continue
            }
            if fds[0].revents != 0 {
                var drained = [UInt8](repeating: 0, count: 64)
                while read(wakeFD, &drained, drained.count) == drained.count {}
            }
            let now = monotonicNanoseconds()
            var ended: [Int] = []
            let round = sources
            for (index, source) in round.enumerated()
            where fds[index + 1].revents != 0 || deadlines[index] <= now {
                if !source.serve(fds[index + 1].revents) { ended.append(index) }
            }
            for index in ended.reversed() { sources.remove(at: index) }
        }
    }
}

public func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
