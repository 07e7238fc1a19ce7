/// Serialises operations per key (a device path), first come first served.
///
/// BlueZ answers a second concurrent GATT request on a device with InProgress, and a connect racing a read
/// fails both; queueing them here turns those races into waiting.
actor DeviceOperationQueue {
    private struct Waiter {
        let id: UInt64
        /// Resumed with true when the slot is handed over, false when the waiter was cancelled.
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct Lane {
        var waiters: [Waiter] = []
    }

    /// Keys with an operation running; the lane holds who waits behind it.
    private var busy: [String: Lane] = [:]
    private var nextWaiter: UInt64 = 0

    /// Returns once the caller holds `key`; every successful `acquire` must be paired with one `release`.
    /// A task cancelled while waiting leaves the queue at once (the others keep their places) and gets
    /// `.cancelled`; so does one cancelled just as the slot reached it, after passing the slot on.
    func acquire(_ key: String) async throws(BlueZError) {
        if Task.isCancelled { throw .cancelled }
        if busy[key] == nil {
            busy[key] = Lane()
            return
        }
        nextWaiter += 1
        let id = nextWaiter
        let granted = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                if Task.isCancelled {
                    continuation.resume(returning: false)
                } else {
                    busy[key]!.waiters.append(Waiter(id: id, continuation: continuation))
                }
            }
        } onCancel: {
            Task { await self.withdraw(id, from: key) }
        }
        guard granted else { throw .cancelled }
        if Task.isCancelled {
            release(key)
            throw .cancelled
        }
    }

    /// Removes a cancelled waiter; nothing to do when the slot already reached it.
    private func withdraw(_ id: UInt64, from key: String) {
        guard var lane = busy[key], let index = lane.waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = lane.waiters.remove(at: index)
        busy[key] = lane
        waiter.continuation.resume(returning: false)
    }

    /// Hands `key` to the longest waiter, or frees it.
    func release(_ key: String) {
        guard var lane = busy[key] else { return }
        if lane.waiters.isEmpty {
            busy[key] = nil
        } else {
            let next = lane.waiters.removeFirst()
            busy[key] = lane
            next.continuation.resume(returning: true)
        }
    }

    /// Number of callers waiting behind the running operation (for tests and diagnostics).
    func waiting(_ key: String) -> Int {
        busy[key]?.waiters.count ?? 0
    }

    func isBusy(_ key: String) -> Bool {
        busy[key] != nil
    }
}
