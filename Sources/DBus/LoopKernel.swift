internal import CDBus
import Glibc
import Synchronization

/// Something the loop dispatches after libdbus reported queued incoming messages.
protocol LoopDispatchable: AnyObject {
    func dispatch()
}

/// The loop thread's state and its poll() loop. Everything except the work queue, the stop flag and the
/// thread identity is touched only on the loop thread, which is what makes the `@unchecked Sendable` sound.
final class LoopKernel: @unchecked Sendable {
    private struct Queue {
        var items: [@Sendable () -> Void] = []
        var wakePending = false
    }

    /// What a poll slot serves. Trivial (no references): the poll set is rebuilt on every turn, and clearing an
    /// array of enums that held a handler closure was a destroy call per slot, per notification.
    private enum PollOwner {
        case wake
        case dbus(OpaquePointer)
        /// An index into the round's user watches.
        case user(Int)
        case source(Int)
    }

    private struct RoundWatch {
        let id: EventLoop.WatchID
        let fd: Int32
        let handler: @Sendable () -> Void
    }

    private struct UserWatch {
        var fd: Int32
        var handler: @Sendable () -> Void
    }

    private let queue = Mutex(Queue())
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let watchCounter = Atomic<UInt64>(0)
    private let wakeFD: Int32
    /// Watches removed from other threads whose removal has not yet run on the loop: never started again.
    private let removedWatches = Mutex(Set<EventLoop.WatchID>())
    /// How many such removals are on their way: while none is, a ready watch needs no look-up in `removedWatches`
    /// (a lock and a hash per notification on the fd path).
    private let removalsPending = Atomic<Int>(0)
    /// Bumped when a user watch or a libdbus watch is removed on the loop thread: a round whose poll set was built
    /// under the same value can serve the watches it holds without looking each one up again (a hash per ready
    /// descriptor, on every notification).
    private var watchGeneration: UInt64 = 0

    // Loop-thread only: used through the accessors below, which check the thread in debug builds (in the spirit
    // of swift-nio's NIOLoopBound), so a stray access from another thread fails a test instead of racing.
    private var _dbusWatches = Set<OpaquePointer>()
    private var _dbusTimeouts = Set<OpaquePointer>()
    private var _deadlines = [OpaquePointer: Int64]()       // enabled timeouts → monotonic ms
    private var _userWatches = [EventLoop.WatchID: UserWatch]()
    /// `userWatches` as a list, remade when one is added or removed: a round takes it as it is (one reference)
    /// instead of building and clearing a list of handlers on every turn.
    private var _userWatchList = [RoundWatch]()
    private var _toDispatch = [LoopDispatchable]()
    /// The round's targets while they dispatch, swapped with `toDispatch` so that neither array's buffer is freed
    /// and allocated again on every notification.
    private var _dispatching = [LoopDispatchable]()
    private var _sources = [PollSource]()

    private var dbusWatches: Set<OpaquePointer> {
        _read { assertOnLoopThread("dbusWatches"); yield _dbusWatches }
        _modify { assertOnLoopThread("dbusWatches"); yield &_dbusWatches }
    }

    private var dbusTimeouts: Set<OpaquePointer> {
        _read { assertOnLoopThread("dbusTimeouts"); yield _dbusTimeouts }
        _modify { assertOnLoopThread("dbusTimeouts"); yield &_dbusTimeouts }
    }

    private var deadlines: [OpaquePointer: Int64] {
        _read { assertOnLoopThread("deadlines"); yield _deadlines }
        _modify { assertOnLoopThread("deadlines"); yield &_deadlines }
    }

    private var userWatches: [EventLoop.WatchID: UserWatch] {
        _read { assertOnLoopThread("userWatches"); yield _userWatches }
        _modify { assertOnLoopThread("userWatches"); yield &_userWatches }
    }

    private var userWatchList: [RoundWatch] {
        _read { assertOnLoopThread("userWatchList"); yield _userWatchList }
        _modify { assertOnLoopThread("userWatchList"); yield &_userWatchList }
    }

    private var sources: [PollSource] {
        _read { assertOnLoopThread("sources"); yield _sources }
        _modify { assertOnLoopThread("sources"); yield &_sources }
    }

    private var toDispatch: [LoopDispatchable] {
        _read { assertOnLoopThread("toDispatch"); yield _toDispatch }
        _modify { assertOnLoopThread("toDispatch"); yield &_toDispatch }
    }

    init() {
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(wakeFD >= 0, "eventfd failed: errno \(errno)")
    }

    deinit {
        close(wakeFD)
    }

    func start() {
        var tid = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&tid, nil, { context in
            let kernel = Unmanaged<LoopKernel>.fromOpaque(context!).takeRetainedValue()
            kernel.run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        threadID.store(UInt(tid), ordering: .releasing)
        pthread_detach(tid)
    }

    func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    var isLoopThread: Bool {
        pthread_equal(pthread_self(), pthread_t(threadID.load(ordering: .acquiring))) != 0
    }

    /// Debug builds: traps unless called on the loop thread. Release builds: nothing.
    @inline(__always)
    func assertOnLoopThread(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        precondition(isLoopThread, "\(what()) used off the D-Bus loop thread", file: file, line: line)
        #endif
    }

    func enqueue(_ work: @escaping @Sendable () -> Void) {
        let mustWake = queue.withLock { q in
            q.items.append(work)
            if q.wakePending { return false }
            q.wakePending = true
            return true
        }
        // On the loop thread the queue is checked again right before poll(), so no syscall is needed.
        if mustWake && !isLoopThread { wake() }
    }

    /// Makes the loop's poll return (a write to its eventfd); for callers off the loop thread.
    func wakeFromOutside() { wake() }

    func addSource(_ source: PollSource) {
        sources.append(source)
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    func makeWatchID() -> EventLoop.WatchID {
        EventLoop.WatchID(raw: watchCounter.add(1, ordering: .relaxed).newValue)
    }

    func addUserWatch(_ id: EventLoop.WatchID, fd: Int32, _ handler: @escaping @Sendable () -> Void) {
        userWatches[id] = UserWatch(fd: fd, handler: handler)
        listUserWatches()
    }

    func removeUserWatch(_ id: EventLoop.WatchID) {
        guard userWatches.removeValue(forKey: id) != nil else { return }
        watchGeneration &+= 1
        listUserWatches()
    }

    private func listUserWatches() {
        userWatchList = userWatches.map { RoundWatch(id: $0.key, fd: $0.value.fd, handler: $0.value.handler) }
    }

    /// From another thread: the handler is not started again from now on; the loop forgets it on its next turn.
    func removeUserWatchSoon(_ id: EventLoop.WatchID) {
        removalsPending.add(1, ordering: .releasing)
        removedWatches.withLock { _ = $0.insert(id) }
        enqueue { [self] in
            removeUserWatch(id)
            removedWatches.withLock { _ = $0.remove(id) }
            removalsPending.subtract(1, ordering: .releasing)
        }
    }

    func scheduleDispatch(_ target: LoopDispatchable) {
        toDispatch.append(target)
    }

    // MARK: libdbus watch and timeout callbacks (all on the loop thread)

    /// Hands `connection`'s watches and timeouts to this loop.
    func install(on connection: OpaquePointer) -> Bool {
        let data = Unmanaged.passUnretained(self).toOpaque()
        let watches = dbus_connection_set_watch_functions(connection, { watch, data in
            LoopKernel.from(data).dbusWatches.insert(watch!)
            return 1
        }, { watch, data in
            let kernel = LoopKernel.from(data)
            kernel.dbusWatches.remove(watch!)
            kernel.watchGeneration &+= 1
        }, { _, _ in
            // Enabled state is read from libdbus when the poll set is built.
        }, data, nil)
        let timeouts = dbus_connection_set_timeout_functions(connection, { timeout, data in
            LoopKernel.from(data).addTimeout(timeout!)
            return 1
        }, { timeout, data in
            LoopKernel.from(data).removeTimeout(timeout!)
        }, { timeout, data in
            LoopKernel.from(data).toggleTimeout(timeout!)
        }, data, nil)
        dbus_connection_set_wakeup_main_function(connection, { data in
            let kernel = LoopKernel.from(data)
            if !kernel.isLoopThread { kernel.wake() }
        }, data, nil)
        return watches != 0 && timeouts != 0
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> LoopKernel {
        Unmanaged<LoopKernel>.fromOpaque(data!).takeUnretainedValue()
    }

    private func addTimeout(_ timeout: OpaquePointer) {
        dbusTimeouts.insert(timeout)
        toggleTimeout(timeout)
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        dbusTimeouts.remove(timeout)
        deadlines[timeout] = nil
    }

    private func toggleTimeout(_ timeout: OpaquePointer) {
        if dbus_timeout_get_enabled(timeout) != 0 {
            deadlines[timeout] = Self.nowMs() + Int64(dbus_timeout_get_interval(timeout))
        } else {
            deadlines[timeout] = nil
        }
    }

    private static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    // MARK: The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        var fds = [pollfd]()
        var owners = [PollOwner]()
        var sourceDeadlines = [Int64]()
        var sourceRevents = [Int16]()
        while !stopRequested.load(ordering: .acquiring) {
            runQueued()
            runDispatch()
            if stopRequested.load(ordering: .acquiring) { break }

            fds.removeAll(keepingCapacity: true)
            owners.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            owners.append(.wake)
            for watch in dbusWatches where dbus_watch_get_enabled(watch) != 0 {
                let flags = dbus_watch_get_flags(watch)
                var events: Int16 = 0
                if flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
                if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
                owners.append(.dbus(watch))
            }
            let roundWatches = userWatchList     // this round's: a handler that adds or removes one changes the list
            for (index, watch) in roundWatches.enumerated() {
                fds.append(pollfd(fd: watch.fd, events: Int16(POLLIN), revents: 0))
                owners.append(.user(index))
            }
            sourceDeadlines.removeAll(keepingCapacity: true)
            sourceRevents.removeAll(keepingCapacity: true)
            var earliest = Int64.max
            for (index, source) in sources.enumerated() {
                let interest = source.interest()
                sourceDeadlines.append(interest.deadline)
                sourceRevents.append(0)
                earliest = min(earliest, interest.wakeBy)
                if interest.fd >= 0 {
                    fds.append(pollfd(fd: interest.fd, events: interest.events, revents: 0))
                    owners.append(.source(index))
                }
            }
            let generation = watchGeneration
            let pendingWork = queue.withLock { !$0.items.isEmpty } || !toDispatch.isEmpty
            let timeout = pendingWork ? 0 : Self.earlier(pollTimeout(), sourceDeadline: earliest)

            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                precondition(errno == EINTR, "poll failed: errno \(errno)")
                continue
            }
            if ready > 0 {
                for index in fds.indices where fds[index].revents != 0 {
                    switch owners[index] {
                    case .source(let number): sourceRevents[number] = fds[index].revents
                    case .user(let number): handle(roundWatches[number], revents: fds[index].revents, generation: generation)
                    case let owner: handle(owner, revents: fds[index].revents, generation: generation)
                    }
                }
                // What the D-Bus watch just read is dispatched now, before the sources' turn: a notification's
                // PUBLISH is written straight after its signal was read, as a plain C relay would.
                runDispatch()
            }
            if !sourceDeadlines.isEmpty { serveSources(deadlines: sourceDeadlines, revents: sourceRevents) }
            fireTimeouts()
        }
    }

    /// The eventfd is drained in `handle(.wake)`, only when `poll` says it was written: reading it here on every turn
    /// was one system call per notification for nothing. Work queued from another thread always writes it (while
    /// `wakePending` is false), so the next `poll` returns at once even if this turn already ran that work.
    private func runQueued() {
        let items = queue.withLock { q in
            q.wakePending = false
            return q.items.isEmpty ? [] : q.items.swapAndClear()
        }
        for item in items { item() }
    }

    private func runDispatch() {
        assertOnLoopThread("runDispatch")
        while !_toDispatch.isEmpty {
            swap(&_dispatching, &_toDispatch)       // a target may schedule again: into the emptied array
            for target in _dispatching { target.dispatch() }
            _dispatching.removeAll(keepingCapacity: true)
        }
    }

    /// Serves each source whose descriptor was ready or whose deadline passed, in the order they were added, after
    /// the round's other descriptors (a notification's PUBLISH is written before its PUBACK is read). Sources added
    /// during the round wait for the next one.
    private func serveSources(deadlines: [Int64], revents: [Int16]) {
        let now = Self.nowNs()
        var ended: [Int] = []
        for index in deadlines.indices where revents[index] != 0 || deadlines[index] <= now {
            let source = sources[index]          // not borrowed across `serve`, which may add a source
            if !source.serve(revents[index]) { ended.append(index) }
        }
        for index in ended.reversed() { sources.remove(at: index) }
    }

    /// A poll timeout in ms that also ends by `sourceDeadline` (monotonic ns), rounded up so a source is never
    /// served before its deadline and woken again for nothing.
    private static func earlier(_ timeout: Int32, sourceDeadline: Int64) -> Int32 {
        guard sourceDeadline != .max else { return timeout }
        let remaining = Int32(clamping: max(0, (sourceDeadline - nowNs() + 999_999) / 1_000_000))
        return timeout < 0 ? remaining : min(timeout, remaining)
    }

    private static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    private func pollTimeout() -> Int32 {
        guard let next = deadlines.values.min() else { return -1 }
        return Int32(clamping: max(0, next - Self.nowMs()))
    }

    private func handle(_ owner: PollOwner, revents: Int16, generation: UInt64) {
        switch owner {
        case .wake:
            var counter: UInt64 = 0
            _ = read(wakeFD, &counter, 8)
        case .dbus(let watch):
            // libdbus may have removed or disabled it while handling an earlier fd of this round.
            if generation != watchGeneration, !dbusWatches.contains(watch) { return }
            guard dbus_watch_get_enabled(watch) != 0 else { return }
            var flags: UInt32 = 0
            if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
            if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
            if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
            _ = dbus_watch_handle(watch, flags)
        case .source, .user:
            break                   // a source is served after the round (`serveSources`); a user watch below
        }
    }

    private func handle(_ watch: RoundWatch, revents: Int16, generation: UInt64) {
        // An earlier handler of this round may have removed it (then the generation moved on).
        if generation != watchGeneration, userWatches[watch.id] == nil { return }
        if removalsPending.load(ordering: .acquiring) > 0, removedWatches.withLock({ $0.contains(watch.id) }) { return }
        if revents & Int16(POLLNVAL) != 0 {
            // A closed fd would spin the loop forever; the owner forgot removeWatch.
            removeUserWatch(watch.id)
        }
        watch.handler()
    }

    private func fireTimeouts() {
        guard !deadlines.isEmpty else { return }
        let now = Self.nowMs()
        let due = deadlines.filter { $0.value <= now }.map(\.key)
        for timeout in due where deadlines[timeout] != nil {
            // Re-arm first: libdbus may remove the timeout while handling it.
            deadlines[timeout] = now + Int64(dbus_timeout_get_interval(timeout))
            _ = dbus_timeout_handle(timeout)
        }
    }
}

private extension Array {
    mutating func swapAndClear() -> [Element] {
        var taken = [Element]()
        swap(&taken, &self)
        return taken
    }
}
