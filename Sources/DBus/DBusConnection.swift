internal import CDBus
import Durations
import Glibc
import Synchronization

/// A private connection to a message bus, driven by its own `EventLoop` thread. Async methods only enqueue work on
/// that loop and wait for a continuation, so nothing here blocks Swift's cooperative pool.
public final class DBusConnection: Sendable {
    public let loop: EventLoop
    public let uniqueName: String
    let core: ConnectionCore

    /// libdbus needs its locking set up once per process before any connection exists.
    private static let threadsReady: Bool = dbus_threads_init_default() != 0

    private init(loop: EventLoop, core: ConnectionCore, uniqueName: String) {
        self.loop = loop
        self.core = core
        self.uniqueName = uniqueName
    }

    deinit {
        let core = core
        loop.execute { core.shutDown(.disconnected()) }
    }

    /// The system bus; honours DBUS_SYSTEM_BUS_ADDRESS.
    public static func system() async throws(DBusError) -> DBusConnection {
        let address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
            ?? "unix:path=/var/run/dbus/system_bus_socket"
        return try await connect(address: address)
    }

    public static func connect(address: String) async throws(DBusError) -> DBusConnection {
        precondition(threadsReady, "dbus_threads_init_default failed")
        let loop = EventLoop()
        let core = ConnectionCore(loop: loop)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, DBusError>, Never>) in
            loop.execute {
                core.open(address: address) { continuation.resume(returning: $0) }
            }
        }
        return DBusConnection(loop: loop, core: core, uniqueName: try result.get())
    }

    public var isConnected: Bool { core.connected.load(ordering: .acquiring) }

    /// Whether Unix fds (`h`) can be sent and received (negotiated during authentication).
    public var canPassUnixFDs: Bool { core.canPassFDs.load(ordering: .acquiring) }

    /// Fails pending calls with Disconnected and finishes all subscription streams.
    public func close() {
        let core = core
        core.connected.store(false, ordering: .releasing)
        loop.execute { core.shutDown(.disconnected()) }
    }

    /// A method call. A timeout fails with org.freedesktop.DBus.Error.NoReply, a lost connection with
    /// org.freedesktop.DBus.Error.Disconnected, task cancellation with `DBusError.cancelledName`
    /// (the pending call is cancelled).
    public func call(destination: String, path: String, interface: String, member: String,
                     body: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        let core = core
        let id = core.makeID()
        let cancelled = Atomic<Bool>(false)
        let timeoutMs = Self.milliseconds(timeout)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) in
                loop.execute {
                    // A cancellation that came first: its cancelCall ran before this and found nothing.
                    if cancelled.load(ordering: .acquiring) {
                        continuation.resume(returning: .failure(DBusError(name: DBusError.cancelledName, message: "The call was cancelled")))
                        return
                    }
                    core.startCall(id: id, destination: destination, path: path, interface: interface, member: member,
                                   body: body, timeoutMs: timeoutMs) { continuation.resume(returning: $0) }
                }
            }
        } onCancel: {
            cancelled.store(true, ordering: .releasing)
            loop.execute { core.cancelCall(id) }
        }
        return try result.get()
    }

    /// AddMatch is acknowledged before this returns, so no matching signal sent afterwards is missed.
    /// The stream ends when the connection closes; ending iteration (or cancel) removes the match.
    public func subscribe(_ rule: MatchRule) async throws(DBusError) -> AsyncStream<DBusMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: DBusMessage.self)
        let core = core
        let loop = loop
        let id = core.makeID()
        continuation.onTermination = { [weak core] _ in
            guard let core else { return }
            loop.execute { core.removeSubscription(id) }
        }
        let error = await withCheckedContinuation { (done: CheckedContinuation<DBusError?, Never>) in
            loop.execute {
                core.beginSubscription(id, rule: rule, continuation: continuation) { done.resume(returning: $0) }
            }
        }
        if let error {
            continuation.finish()
            throw error
        }
        return stream
    }

    /// Runs `handler` on the loop thread with the bytes of `property` (an `ay`) from every `PropertiesChanged` of
    /// `interface` that `sender` emits for `path`, before any subscription sees the signal; with whether the property
    /// came alone in it. The bytes are lent from libdbus's message, valid only during the call (no array per value).
    /// When the handler returns true the subscriptions do not get that signal. It must be quick and must not block. The tap adds no match rule of its own: a `subscribe` covering the same signals must be
    /// active (its sender tracking is what lets a well-known `sender` match). Ends when the token is cancelled.
    public func tapProperty(sender: String, path: String, interface: String, property: String,
                            handler: @escaping @Sendable (_ value: UnsafeRawBufferPointer, _ alone: Bool) -> Bool) async -> SignalTap {
        let core = core
        let id = core.makeID()
        let tap = PropertyTap(sender: sender, path: path, interface: interface, property: property, handler: handler)
        await loop.run { core.taps[id] = tap }
        return SignalTap { [weak core, loop] in
            guard let core else { return }
            loop.execute { core.taps[id] = nil }
        }
    }

    /// Sends a signal from this connection (for tests and tools; the bridge only listens).
    public func emitSignal(path: String, interface: String, member: String, body: [DBusValue] = []) async throws(DBusError) {
        let core = core
        let result = await loop.run { () -> Result<Void, DBusError> in
            do throws(DBusError) {
                try core.emitSignal(path: path, interface: interface, member: member, body: body)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Answers method calls to `path` with `handler`, which runs on the loop thread and must not block.
    /// Calls to paths without a handler get libdbus's UnknownMethod error. The daemon's pairing agent
    /// (`org.bluez.Agent1`) is one; tests use it for fake services.
    public func exportHandler(path: String, handler: @escaping @Sendable (DBusMessage) -> DBusReply) async {
        let core = core
        await loop.run { core.handlers[path] = handler }
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        // Int32.max is DBUS_TIMEOUT_INFINITE; under a millisecond would be 0, which libdbus takes as "default".
        Int32(clamping: max(1, duration.inMilliseconds))
    }
}
