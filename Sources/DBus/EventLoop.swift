import Glibc

/// The dedicated thread that runs libdbus. Anything else that needs fd readiness (AcquireNotify sockets) uses it
/// too, so a notification costs one `read()` and no hop through another thread.
public final class EventLoop: Sendable {
    public struct WatchID: Hashable, Sendable {
        let raw: UInt64
    }

    let kernel: LoopKernel

    public init() {
        kernel = LoopKernel()
        kernel.start()
    }

    deinit {
        kernel.stop()
    }

    /// Runs `work` on the loop thread, in FIFO order with every other `execute`.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        kernel.enqueue(work)
    }

    /// Calls `onReadable` on the loop thread whenever `fd` is readable (or hung up / in error: the handler's `read`
    /// then reports it). Level-triggered: the handler must consume what is readable or remove the watch.
    public func watchReadable(fd: Int32, _ onReadable: @escaping @Sendable () -> Void) -> WatchID {
        let id = kernel.makeWatchID()
        if isLoopThread {
            kernel.addUserWatch(id, fd: fd, onReadable)
        } else {
            let kernel = kernel
            kernel.enqueue { kernel.addUserWatch(id, fd: fd, onReadable) }
        }
        return id
    }

    /// Safe from any thread; once it returns the handler is never started again (from another thread, a call
    /// already running on the loop may still be finishing).
    public func removeWatch(_ id: WatchID) {
        if isLoopThread {
            kernel.removeUserWatch(id)
        } else {
            kernel.removeUserWatchSoon(id)
        }
    }

    public var isLoopThread: Bool { kernel.isLoopThread }

    /// Serves a source (see `PollInterest`) on the loop thread from its next turn on, until its `serve` returns false.
    public func addSource(interest: @escaping @Sendable () -> PollInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        let source = PollSource(interest: interest, serve: serve)
        let kernel = kernel
        if isLoopThread {
            kernel.addSource(source)
        } else {
            kernel.enqueue { kernel.addSource(source) }
        }
    }

    /// From any thread: the loop asks its sources for their interest again before it next sleeps.
    public func wakeUp() {
        if !isLoopThread { kernel.wakeFromOutside() }
    }

    /// A round trip through the loop (watchdog liveness).
    public func ping() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            execute { continuation.resume() }
        }
    }

    /// Runs `work` on the loop thread and returns its result.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            execute { continuation.resume(returning: work()) }
        }
    }
}
