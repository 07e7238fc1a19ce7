import Glibc

/// A plain (non-priority-inheriting) pthread mutex for `MosquittoHandle.io`.
///
/// `Synchronization.Mutex` is a PI futex on Linux: under contention its unlock hands the lock to the sleeping
/// waiter, so a thread that takes the lock again at once (the network thread does, several times per packet)
/// queues behind it and both sleep. Measured on the bench at 1 kHz, that convoy cost more CPU than the thread
/// wake-up the direct write saves. glibc's ordinary mutex lets the running thread take it again.
final class IOLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

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
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
