import Synchronization

/// A registration made by `DBusConnection.tap`; `cancel()` removes it (idempotent, also on deinit).
public final class SignalTap: Sendable {
    private let remove: Mutex<(@Sendable () -> Void)?>

    init(remove: @escaping @Sendable () -> Void) { self.remove = Mutex(remove) }

    public func cancel() {
        let action = remove.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}
