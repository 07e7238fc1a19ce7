import Glibc
import Synchronization

/// A file descriptor with exactly one owner: closed when the owner goes away, unless `take()` hands the raw
/// number to code that closes it itself. Non-copyable, so the compiler refuses a second owner.
public struct OwnedFD: ~Copyable, Sendable {
    private let fd: Int32

    /// Takes ownership of `fd`.
    public init(_ fd: Int32) { self.fd = fd }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }

    /// The number, still owned by this value (for a call that uses it now).
    public var rawValue: Int32 { fd }

    /// Ends this value's ownership; the caller must close the returned fd.
    public consuming func take() -> Int32 {
        let fd = fd
        discard self
        return fd
    }
}

/// A file descriptor received in a D-Bus message (libdbus dup'ed it for us). `DBusValue` is a copyable value, so
/// it holds this reference: copies of the value share one owner, the fd is closed exactly once — by whoever
/// `take()`s it, or when the last copy of the value is gone — and a received fd nobody asked for never leaks.
public final class ReceivedFD: Sendable, Hashable, CustomStringConvertible {
    private let fd: Mutex<Int32>

    init(_ fd: Int32) { self.fd = Mutex(fd) }

    deinit {
        let fd = fd.withLock { $0 }
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// The descriptor as an owner; nil when another holder took it already.
    public func take() -> OwnedFD? {
        let fd = fd.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        return fd >= 0 ? OwnedFD(fd) : nil
    }

    /// The number while still owned here, else −1 (to send it on: libdbus dups it).
    func peek() -> Int32 { fd.withLock { $0 } }

    public static func == (lhs: ReceivedFD, rhs: ReceivedFD) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public var description: String { "ReceivedFD(\(fd.withLock { $0 }))" }
}
