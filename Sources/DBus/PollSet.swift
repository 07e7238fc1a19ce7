import Glibc

/// The loop's `poll` descriptors, kept from turn to turn and remade only when a watch or source comes or goes or
/// libdbus toggles a watch. `poll` writes only `revents` (every slot's, on each call), so an unchanged set is handed
/// to it again as it is, where emptying and refilling four arrays cost a few hundred instructions per notification.
/// Slots run: the wake eventfd, libdbus's enabled watches, the user watches, then one per source. A source's slot
/// stays put while its interest changes (a source without a descriptor has fd −1, which `poll` skips).
struct PollSet {
    /// What a slot before the sources' serves. Trivial (no references): a handler is found through `watches`.
    enum Owner {
        case wake
        case dbus(OpaquePointer)
        /// An index into `watches`.
        case user(Int)
    }

    /// A user watch as the round holds it: a handler that adds or removes one changes the loop's table, not this.
    struct Watch {
        let id: EventLoop.WatchID
        let handler: @Sendable () -> Void
    }

    var fds: [pollfd] = []
    /// One per slot before `sourceBase`.
    var owners: [Owner] = []
    var watches: [Watch] = []
    /// The sources served this round, in the order they were added; a source added during the round waits for the
    /// set to be remade on the next turn.
    var sources: [PollSource] = []
    /// Per source: the deadline it holds (see `LoopKernel`'s rules): the earliest its interest named since it was
    /// last served, `.max` for none. Asking again can bring it forward, never push it back; serving clears it.
    var sourceDeadlines: [Int64] = []
    /// Per source: when `poll` must return at the latest for it, held the same way.
    var sourceWakeBys: [Int64] = []
    /// The slot of `sources[0]`.
    var sourceBase = 0

    mutating func removeAll() {
        fds.removeAll(keepingCapacity: true)
        owners.removeAll(keepingCapacity: true)
        watches.removeAll(keepingCapacity: true)
    }

    mutating func add(fd: Int32, events: Int16, _ owner: Owner) {
        fds.append(pollfd(fd: fd, events: events, revents: 0))
        owners.append(owner)
    }

    mutating func addUser(_ id: EventLoop.WatchID, fd: Int32, handler: @escaping @Sendable () -> Void) {
        add(fd: fd, events: Int16(POLLIN), .user(watches.count))
        watches.append(Watch(id: id, handler: handler))
    }

    /// A source that stays keeps the deadline it holds: a watch coming or going (which remakes the set) must not
    /// forget a deadline that was due.
    mutating func setSources(_ list: [PollSource]) {
        var deadlines = [Int64](), wakeBys = [Int64]()
        for source in list {
            let kept = sources.firstIndex { $0 === source }
            deadlines.append(kept.map { sourceDeadlines[$0] } ?? .max)
            wakeBys.append(kept.map { sourceWakeBys[$0] } ?? .max)
            fds.append(pollfd(fd: -1, events: 0, revents: 0))
        }
        sourceBase = fds.count - list.count
        sources = list
        sourceDeadlines = deadlines
        sourceWakeBys = wakeBys
    }

    /// After `sources[index]` was served: it holds no deadline until it names one again.
    mutating func served(_ index: Int) {
        sourceDeadlines[index] = .max
        sourceWakeBys[index] = .max
    }

    /// Asks each source for its interest and puts it in the source's slot; the earliest time `poll` must return by
    /// for them (`.max` for none). A deadline only moves earlier here: a source asked on every turn of a busy loop
    /// whose interest says "a second from now" each time would otherwise never come due.
    mutating func refreshSources() -> Int64 {
        var earliest = Int64.max
        for index in sources.indices {
            let interest = sources[index].interest()
            sourceDeadlines[index] = min(sourceDeadlines[index], interest.deadline)
            sourceWakeBys[index] = min(sourceWakeBys[index], interest.wakeBy)
            earliest = min(earliest, sourceWakeBys[index])
            fds[sourceBase + index].fd = interest.fd
            fds[sourceBase + index].events = interest.fd >= 0 ? interest.events : 0
        }
        return earliest
    }
}
