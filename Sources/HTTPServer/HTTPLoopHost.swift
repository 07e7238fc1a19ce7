import CMicroHTTPD
import Glibc
import Synchronization

/// The thread whose `poll` loop drives the server: in the daemon the D-Bus event loop (Bridge's
/// `EventLoopHTTPHost`), so the page's requests are answered where the bridge's state is written, with no thread of
/// the server's own; in tests and tools an `HTTPThreadHost`. Every libmicrohttpd call is made on this thread.
public protocol HTTPLoopHost: Sendable {
    /// On the host's thread, from now on: `interest` before every `poll`, `serve` after it with the descriptor's
    /// `revents` (0 when only the deadline passed), until `serve` returns false. Neither blocks.
    func attach(interest: @escaping @Sendable () -> HTTPPollInterest, serve: @escaping @Sendable (Int16) -> Bool)
    /// From any thread: runs `work` on the host's thread soon, in FIFO order with other such work, and makes the
    /// host ask `interest` again before it next sleeps. From the host's thread too (then on a later turn).
    func execute(_ work: @escaping @Sendable () -> Void)
    var isHostThread: Bool { get }
}

/// What the server waits for in the host's next `poll`.
public struct HTTPPollInterest: Sendable, Equatable {
    /// libmicrohttpd's epoll descriptor (every connection and the listening socket are in its set), −1 for none.
    public var fd: Int32
    public var events: Int16
    /// CLOCK_MONOTONIC nanoseconds from which `serve` runs even if the descriptor is not ready; `.max` for never:
    /// with no client connected libmicrohttpd has no timeout, and the server costs no wake-up.
    public var deadline: Int64

    public init(fd: Int32, events: Int16, deadline: Int64) {
        self.fd = fd
        self.events = events
        self.deadline = deadline
    }
}

/// A thread with a `poll` loop of its own, for tests and tools that have no D-Bus loop. Runs until `shutdown()`.
public final class HTTPThreadHost: HTTPLoopHost, @unchecked Sendable {
    private struct Source {
        var interest: @Sendable () -> HTTPPollInterest
        var serve: @Sendable (Int16) -> Bool
    }

    private let wakeFD: Int32
    private let work = Mutex<[@Sendable () -> Void]>([])
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let joined = Mutex<Bool>(false)

    // Host-thread only (the thread's own loop and the work it runs), hence the `@unchecked Sendable`.
    @exclusivity(unchecked) private var _sources: [Source] = []

    private var sources: [Source] {
        _read { precondition(isHostThread, "HTTPThreadHost.sources off its thread"); yield _sources }
        _modify { precondition(isHostThread, "HTTPThreadHost.sources off its thread"); yield &_sources }
    }

    public init() {
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(wakeFD >= 0, "eventfd failed: errno \(errno)")
        var tid = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&tid, nil, { context in
            let host = Unmanaged<HTTPThreadHost>.fromOpaque(context!).takeRetainedValue()
            host.threadID.store(UInt(pthread_self()), ordering: .releasing)
            host.run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        threadID.store(UInt(tid), ordering: .releasing)
    }

    deinit {
        close(wakeFD)
    }

    public func attach(interest: @escaping @Sendable () -> HTTPPollInterest, serve: @escaping @Sendable (Int16) -> Bool) {
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
        precondition(!isHostThread, "HTTPThreadHost.shutdown on its own thread")
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
        _ = write(wakeFD, &one, 8)
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
                var counter: UInt64 = 0
                _ = read(wakeFD, &counter, 8)
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

func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
