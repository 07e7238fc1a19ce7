internal import CDBus
import Glibc
import Synchronization

/// The loop thread's state and its poll() loop. Everything except the work queue, the stop flag and the
/// thread identity is touched only on the loop thread, which is what makes the `@unchecked Sendable` sound.
///
/// The loop is fair by construction; these rules are what the watchdog and the MQTT keepalive rely on when the bus,
/// the broker or a notification socket is busy (docs/dev/ARCHITECTURE.md, "The event loop"):
/// 1. One turn is: the queued work that was there when the turn began, the scheduled D-Bus dispatches, one `poll`,
///    then every descriptor `poll` found ready, then every source that is ready or due, then libdbus's due timeouts.
///    Nothing ready or due is left for a later turn, so no ready descriptor waits behind another for more than one.
/// 2. A source's deadline is a point in time it holds until it is served: asking for its interest again (before
///    every `poll`) can bring the deadline forward, never push it back. A source whose interest says "a second from
///    now" on every turn of a busy loop is still served a second after its last turn.
/// 3. A source whose deadline has passed is served on the next turn, whatever else woke the loop.
/// 4. The work per descriptor per turn is bounded: libdbus reads one buffer per watch, a notification socket
///    reader takes a few batches, the broker's socket one read (one batch after a gathering). What is left keeps
///    its descriptor ready, so the next turn comes at once and serves everyone again: a flood on one descriptor
///    cannot starve another.
final class LoopKernel: @unchecked Sendable {
    private struct Queue {
        var items: [@Sendable () -> Void] = []
        var wakePending = false
    }

    private struct UserWatch {
        var fd: Int32
        var handler: @Sendable () -> Void
    }

    private let queue = Mutex(Queue())
    /// Whether `queue` holds items: a turn with nothing queued (nearly every turn) takes no lock. Set under the lock
    /// with the items; a turn that reads it stale still wakes, since the enqueuer then writes the eventfd.
    private let queueHasWork = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    private let watchCounter = Atomic<UInt64>(0)
    private let wakeFD: Int32
    /// Watches removed from other threads whose removal has not yet run on the loop: never started again.
    private let removedWatches = Mutex(Set<EventLoop.WatchID>())
    /// How many such removals are on their way: while none is, a ready watch needs no look-up in `removedWatches`
    /// (a lock and a hash per notification on the fd path).
    private let removalsPending = Atomic<Int>(0)

    // Loop-thread only: used through the accessors below, which check the thread in debug builds (in the spirit
    // of swift-nio's NIOLoopBound), so a stray access from another thread fails a test instead of racing. One thread
    // and no overlapping accesses, so Swift's dynamic exclusivity check is off for them (`@exclusivity(unchecked)`):
    // it was a runtime call per access, and the loop makes a few per notification.
    @exclusivity(unchecked) private var _dbusWatches = Set<OpaquePointer>()
    @exclusivity(unchecked) private var _dbusTimeouts = Set<OpaquePointer>()
    @exclusivity(unchecked) private var _deadlines = [OpaquePointer: Int64]()       // enabled timeouts → monotonic ns
    @exclusivity(unchecked) private var _userWatches = [EventLoop.WatchID: UserWatch]()
    @exclusivity(unchecked) private var _toDispatch = [Unmanaged<ConnectionCore>]()
    @exclusivity(unchecked) private var _sources = [PollSource]()
    /// Set when a watch or source comes or goes or libdbus toggles a watch: the next turn remakes its poll set. Also
    /// tells a round that a watch it holds may be gone (then it is looked up before being served).
    @exclusivity(unchecked) private var _pollSetStale = true
    /// Whether `toDispatch` holds targets.
    @exclusivity(unchecked) private var _dispatchPending = false
    /// The earliest of `deadlines`, `.max` for none: most turns need neither the dictionary nor the clock for them.
    @exclusivity(unchecked) private var _earliestTimeout = Int64.max
    #if DEBUG
    /// Inside `runDispatch` (checked by `cancelDispatch`).
    @exclusivity(unchecked) private var isDispatching = false
    #endif

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

    private var sources: [PollSource] {
        _read { assertOnLoopThread("sources"); yield _sources }
        _modify { assertOnLoopThread("sources"); yield &_sources }
    }

    private var pollSetStale: Bool {
        get { assertOnLoopThread("pollSetStale"); return _pollSetStale }
        set { assertOnLoopThread("pollSetStale"); _pollSetStale = newValue }
    }

    private var dispatchPending: Bool {
        get { assertOnLoopThread("dispatchPending"); return _dispatchPending }
        set { assertOnLoopThread("dispatchPending"); _dispatchPending = newValue }
    }

    private var earliestTimeout: Int64 {
        get { assertOnLoopThread("earliestTimeout"); return _earliestTimeout }
        set { assertOnLoopThread("earliestTimeout"); _earliestTimeout = newValue }
    }

    private var toDispatch: [Unmanaged<ConnectionCore>] {
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
            queueHasWork.store(true, ordering: .relaxed)
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
        pollSetStale = true
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
        pollSetStale = true
    }

    func removeUserWatch(_ id: EventLoop.WatchID) {
        guard userWatches.removeValue(forKey: id) != nil else { return }
        pollSetStale = true
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

    /// Dispatches `core` on this turn or the next. Borrowed, not retained: the core has a side table (weak
    /// references to it exist), where each retain and release takes the slow path, and a notification on the signal
    /// path cost four of them here. It is alive until its `release`, which runs from the work queue (never inside a
    /// dispatch) and calls `cancelDispatch` first.
    func scheduleDispatch(_ core: ConnectionCore) {
        toDispatch.append(Unmanaged.passUnretained(core))
        dispatchPending = true
    }

    // MARK: libdbus watch and timeout callbacks (all on the loop thread)

    /// Hands `connection`'s watches and timeouts to this loop.
    func install(on connection: OpaquePointer) -> Bool {
        let data = Unmanaged.passUnretained(self).toOpaque()
        let watches = dbus_connection_set_watch_functions(connection, { watch, data in
            LoopKernel.with(data) { kernel in
                kernel.dbusWatches.insert(watch!)
                kernel.pollSetStale = true
            }
            return 1
        }, { watch, data in
            LoopKernel.with(data) { kernel in
                kernel.dbusWatches.remove(watch!)
                kernel.pollSetStale = true
            }
        }, { _, data in
            // Enabled state and flags are read from libdbus when the poll set is remade.
            LoopKernel.with(data) { $0.pollSetStale = true }
        }, data, nil)
        let timeouts = dbus_connection_set_timeout_functions(connection, { timeout, data in
            LoopKernel.with(data) { $0.addTimeout(timeout!) }
            return 1
        }, { timeout, data in
            LoopKernel.with(data) { $0.removeTimeout(timeout!) }
        }, { timeout, data in
            LoopKernel.with(data) { $0.toggleTimeout(timeout!) }
        }, data, nil)
        dbus_connection_set_wakeup_main_function(connection, { data in
            LoopKernel.with(data) { kernel in
                if !kernel.isLoopThread { kernel.wake() }
            }
        }, data, nil)
        return watches != 0 && timeouts != 0
    }

    /// `data` is the kernel, unretained: its loop thread holds it for as long as a connection installed on it can call
    /// back, so it is borrowed for the call instead of retained and released around each one, the wake-up
    /// function's with every message. (Only the wake-up function may be called off the loop thread; it checks.)
    private static func with<Result>(_ data: UnsafeMutableRawPointer?, _ body: (LoopKernel) -> Result) -> Result {
        Unmanaged<LoopKernel>.fromOpaque(data!)._withUnsafeGuaranteedRef(body)
    }

    private func addTimeout(_ timeout: OpaquePointer) {
        dbusTimeouts.insert(timeout)
        toggleTimeout(timeout)
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        dbusTimeouts.remove(timeout)
        setDeadline(of: timeout, nil)
    }

    private func toggleTimeout(_ timeout: OpaquePointer) {
        let enabled = dbus_timeout_get_enabled(timeout) != 0
        setDeadline(of: timeout, enabled ? Self.deadline(of: timeout, from: Self.nowNs()) : nil)
    }

    private static func deadline(of timeout: OpaquePointer, from now: Int64) -> Int64 {
        now + Int64(dbus_timeout_get_interval(timeout)) * 1_000_000
    }

    private func setDeadline(of timeout: OpaquePointer, _ deadline: Int64?) {
        deadlines[timeout] = deadline
        earliestTimeout = deadlines.values.min() ?? .max
    }

    // MARK: The loop

    /// The round's state lives in `set`, a local: it is reached without the exclusivity checks and reference counting
    /// that the kernel's stored properties cost on every access, which at 1 kHz is every notification.
    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        var set = PollSet()
        var dispatching = [Unmanaged<ConnectionCore>]()
        while !stopRequested.load(ordering: .acquiring) {
            runQueued()
            if dispatchPending { runDispatch(&dispatching) }
            if stopRequested.load(ordering: .acquiring) { break }

            if pollSetStale { remake(&set) }
            let sourcesWakeBy = set.refreshSources()
            let timeout: Int32
            if queueHasWork.load(ordering: .acquiring) || dispatchPending {
                timeout = 0
            } else {
                timeout = Self.timeout(until: min(sourcesWakeBy, earliestTimeout))
            }

            let ready = poll(&set.fds, nfds_t(set.fds.count), timeout)
            if ready < 0 {
                precondition(errno == EINTR, "poll failed: errno \(errno)")
                continue
            }
            if ready > 0 {
                for index in 0..<set.sourceBase where set.fds[index].revents != 0 {
                    let revents = set.fds[index].revents
                    switch set.owners[index] {
                    case .wake:
                        var counter: UInt64 = 0
                        _ = read(wakeFD, &counter, 8)
                    case .dbus(let watch): handle(watch, revents: revents)
                    case .user(let number): handle(set.watches[number], revents: revents)
                    }
                }
                // What the D-Bus watch just read is dispatched now, before the sources' turn: a notification's
                // PUBLISH is written straight after its signal was read, as a plain C relay would.
                if dispatchPending { runDispatch(&dispatching) }
            }
            if set.sources.isEmpty, earliestTimeout == .max { continue }
            let now = Self.nowNs()           // one clock read after the poll, for the sources and the timeouts
            if !set.sources.isEmpty { serveSources(&set, now: now) }
            fireTimeouts(now: now)
        }
    }

    private func remake(_ set: inout PollSet) {
        pollSetStale = false
        set.removeAll()
        set.add(fd: wakeFD, events: Int16(POLLIN), .wake)
        for watch in dbusWatches where dbus_watch_get_enabled(watch) != 0 {
            let flags = dbus_watch_get_flags(watch)
            var events: Int16 = 0
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
            set.add(fd: dbus_watch_get_unix_fd(watch), events: events, .dbus(watch))
        }
        for (id, watch) in userWatches { set.addUser(id, fd: watch.fd, handler: watch.handler) }
        set.setSources(sources)
    }

    /// The eventfd is drained when `poll` says it was written, only then: reading it on every turn was one system
    /// call per notification for nothing. Work queued from another thread always writes it (while `wakePending` is
    /// false), so the next `poll` returns at once even if this turn already ran that work. An empty queue has
    /// `wakePending` false already (both change together under the lock), so skipping the lock loses no wake-up.
    private func runQueued() {
        guard queueHasWork.load(ordering: .acquiring) else { return }
        let items = queue.withLock { q in
            q.wakePending = false
            queueHasWork.store(false, ordering: .relaxed)
            return q.items.swapAndClear()
        }
        for item in items { item() }
    }

    /// `dispatching` is the run's, kept between turns: swapped with `toDispatch` so that neither array's buffer is
    /// freed and allocated again on every notification, and with one access to the kernel's stored property per pass.
    private func runDispatch(_ dispatching: inout [Unmanaged<ConnectionCore>]) {
        assertOnLoopThread("runDispatch")
        #if DEBUG
        isDispatching = true
        defer { isDispatching = false }
        #endif
        while dispatchPending {
            dispatchPending = false
            swap(&dispatching, &_toDispatch)        // a target may schedule again: into the emptied array
            for target in dispatching { target._withUnsafeGuaranteedRef { $0.dispatch() } }
            dispatching.removeAll(keepingCapacity: true)
        }
    }

    /// Forgets a scheduled dispatch of `core`, which is about to be released (see `scheduleDispatch`). Not from
    /// inside a dispatch: the round's own list would still hold it.
    func cancelDispatch(_ core: ConnectionCore) {
        #if DEBUG
        precondition(!isDispatching, "cancelDispatch inside a dispatch")
        #endif
        toDispatch.removeAll { $0.toOpaque() == Unmanaged.passUnretained(core).toOpaque() }
    }

    /// Serves each source whose descriptor was ready or whose deadline passed, in the order they were added, after
    /// the round's other descriptors (a notification's PUBLISH is written before its PUBACK is read). Sources added
    /// during the round wait for the next one.
    private func serveSources(_ set: inout PollSet, now: Int64) {
        var ended: [Int] = []
        for index in set.sources.indices {
            let revents = set.fds[set.sourceBase + index].revents
            guard revents != 0 || set.sourceDeadlines[index] <= now else { continue }
            set.served(index)
            if !set.sources[index].serve(revents) { ended.append(index) }
        }
        guard !ended.isEmpty else { return }
        // The round's sources are the first of `sources`: those added since come after them.
        for index in ended.reversed() { sources.remove(at: index) }
        pollSetStale = true
    }

    /// A poll timeout in ms that ends by `wakeBy` (monotonic ns), rounded up so that nothing is served before its
    /// deadline and woken again for nothing; −1 (none) for `.max`.
    private static func timeout(until wakeBy: Int64) -> Int32 {
        guard wakeBy != .max else { return -1 }
        return Int32(clamping: max(0, (wakeBy - nowNs() + 999_999) / 1_000_000))
    }

    private static func nowNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    private func handle(_ watch: OpaquePointer, revents: Int16) {
        // libdbus may have removed or disabled it while handling an earlier fd of this round (a removal marks the
        // set stale).
        if pollSetStale, !dbusWatches.contains(watch) { return }
        guard dbus_watch_get_enabled(watch) != 0 else { return }
        var flags: UInt32 = 0
        if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
        if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
        if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
        _ = dbus_watch_handle(watch, flags)
    }

    private func handle(_ watch: PollSet.Watch, revents: Int16) {
        // An earlier handler of this round may have removed it (then the set is stale).
        if pollSetStale, userWatches[watch.id] == nil { return }
        if removalsPending.load(ordering: .acquiring) > 0, removedWatches.withLock({ $0.contains(watch.id) }) { return }
        if revents & Int16(POLLNVAL) != 0 {
            // A closed fd would spin the loop forever; the owner forgot removeWatch.
            removeUserWatch(watch.id)
        }
        watch.handler()
    }

    private func fireTimeouts(now: Int64) {
        guard now >= earliestTimeout else { return }
        let due = deadlines.filter { $0.value <= now }.map(\.key)
        for timeout in due where deadlines[timeout] != nil {
            // Re-arm first: libdbus may remove the timeout while handling it.
            setDeadline(of: timeout, Self.deadline(of: timeout, from: now))
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
