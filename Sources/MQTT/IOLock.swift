import Glibc
import Synchronization

/// A plain (non-priority-inheriting) pthread mutex for `MosquittoHandle.io`.
///
/// `Synchronization.Mutex` is a PI futex on Linux: under contention its unlock hands the lock to the sleeping
/// waiter, so a thread that takes the lock again at once (the network thread does, several times per packet)
/// queues behind it and both sleep. Measured on the bench at 1 kHz, that convoy cost more CPU than the thread
/// wake-up the direct write saves. glibc's ordinary mutex lets the running thread take it again.
///
/// Debug builds record the holder so that code which must run under the lock can say so (`assertHeld`) and a
/// violation fails loudly in tests instead of corrupting libmosquitto's state now and then.
final class IOLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #if DEBUG
    private let holder = Atomic<UInt>(0)
    #endif

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` only if the lock is free at once; nil otherwise.
    func withLockIfAvailable<T>(_ body: () throws -> T) rethrows -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        didLock()
        defer { unlock() }
        return try body()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        precondition(!isHeldByCurrentThread, "IOLock is not recursive")
        pthread_mutex_lock(mutex)
        didLock()
        defer { unlock() }
        return try body()
    }

    /// Debug builds: traps unless the calling thread holds the lock. Release builds: nothing.
    @inline(__always)
    func assertHeld(file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        precondition(isHeldByCurrentThread, "libmosquitto called without the I/O lock", file: file, line: line)
        #endif
    }

    private var isHeldByCurrentThread: Bool {
        #if DEBUG
        holder.load(ordering: .relaxed) == UInt(pthread_self())
        #else
        false
        #endif
    }

    @inline(__always)
    private func didLock() {
        #if DEBUG
        holder.store(UInt(pthread_self()), ordering: .relaxed)
        #endif
    }

    @inline(__always)
    private func unlock() {
        #if DEBUG
        holder.store(0, ordering: .relaxed)
        #endif
        pthread_mutex_unlock(mutex)
    }
}

/// Debug-build check that code runs on the one thread allowed to touch some state, in the spirit of swift-nio's
/// `NIOLoopBound`: the owning thread is recorded when it starts, and `assertOnOwner` traps anywhere else.
/// Release builds store nothing and check nothing.
struct ThreadOwner: ~Copyable, Sendable {
    #if DEBUG
    private let owner = Atomic<UInt>(0)
    #endif

    init() {}

    /// Call first thing on the owning thread.
    func claim() {
        #if DEBUG
        owner.store(UInt(pthread_self()), ordering: .releasing)
        #endif
    }

    @inline(__always)
    func assertOnOwner(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        precondition(owner.load(ordering: .acquiring) == UInt(pthread_self()), "\(what()) off its thread",
                     file: file, line: line)
        #endif
    }
}
