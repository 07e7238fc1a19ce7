/// Serialises operations per key (a device path), first come first served.
///
/// BlueZ answers a second concurrent GATT request on a device with InProgress, and a connect racing a read
/// fails both; queueing them here turns those races into waiting.
actor DeviceOperationQueue {
    private struct Lane {
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Keys with an operation running; the lane holds who waits behind it.
    private var busy: [String: Lane] = [:]

    /// Returns once the caller holds `key`; every `acquire` must be paired with one `release`.
    func acquire(_ key: String) async {
        if busy[key] == nil {
            busy[key] = Lane()
            return
        }
        await withCheckedContinuation { continuation in
            busy[key]!.waiters.append(continuation)
        }
    }

    /// Hands `key` to the longest waiter, or frees it.
    func release(_ key: String) {
        guard var lane = busy[key] else { return }
        if lane.waiters.isEmpty {
            busy[key] = nil
        } else {
            let next = lane.waiters.removeFirst()
            busy[key] = lane
            next.resume()
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
