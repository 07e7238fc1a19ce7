import Synchronization

/// Waits for `work` but no longer than `limit`; returns false on timeout. Used on shutdown, where systemd expects
/// us gone within seconds even if bluetoothd does not answer. Unstructured on purpose: a child task the caller had
/// to await would defeat the bound; the work keeps running after a timeout, and the process is about to exit.
package func finish(within limit: Duration, _ work: @escaping @Sendable () async -> Void) async -> Bool {
    let once = Once()
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Task {
            await work()
            if once.claim() { continuation.resume(returning: true) }
        }
        Task {
            try? await Task.sleep(for: limit)
            if once.claim() { continuation.resume(returning: false) }
        }
    }
}

/// True for the first caller only.
final class Once: Sendable {
    private let taken = Mutex(false)

    func claim() -> Bool {
        taken.withLock { flag in
            defer { flag = true }
            return !flag
        }
    }
}
