internal import CDBus
import Glibc
import Synchronization

/// The libdbus side of a `DBusConnection`: the `DBusConnection*`, pending calls, subscriptions, exported handlers.
/// Every method runs on the loop thread (only `connected`/`canPassFDs`/ids are read elsewhere), which is what makes
/// the `@unchecked Sendable` sound; debug builds check it on every access to the loop-only state.
final class ConnectionCore: @unchecked Sendable {
    typealias Completion = (Result<[DBusValue], DBusError>) -> Void

    struct PendingCall {
        var pending: OpaquePointer
        var completion: Completion
    }

    /// The user data of a pending call's notify function: which call completed.
    final class CallToken {
        weak var core: ConnectionCore?
        let id: UInt64
        init(core: ConnectionCore, id: UInt64) {
            self.core = core
            self.id = id
        }
    }

    let loop: EventLoop
    let connected = Atomic<Bool>(false)
    let canPassFDs = Atomic<Bool>(false)
    private let idCounter = Atomic<UInt64>(0)

    // Loop-thread only: used through the accessors below, which check the thread in debug builds. Without Swift's
    // dynamic exclusivity check (`@exclusivity(unchecked)`): on one thread it could only catch an access inside
    // another's modify, and each access here is one statement (loops walk a copy, handlers change these only
    // through `loop.execute`); the check was a runtime call per access (`swift_beginAccess`, an access-set insert
    // and a thread-local look-up), several per signal.
    @exclusivity(unchecked) private var _raw: OpaquePointer? = nil
    @exclusivity(unchecked) private var _filterAdded: Bool = false
    @exclusivity(unchecked) private var _calls: [UInt64: PendingCall] = [:]
    @exclusivity(unchecked) private var _subscriptions: [UInt64: Subscription] = [:]
    @exclusivity(unchecked) private var _owners: [String: OwnerWatch] = [:]
    @exclusivity(unchecked) private var _ownersGeneration: UInt64 = 0
    @exclusivity(unchecked) private var _taps: [UInt64: PropertyTap] = [:]
    @exclusivity(unchecked) private var _handlers: [String: @Sendable (DBusMessage) -> DBusReply] = [:]

    private(set) var raw: OpaquePointer? {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.raw"); yield _raw }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.raw"); yield &_raw }
    }

    /// Loop-thread only, but an atomic: read on every change of libdbus's dispatch status (several per message),
    /// where a stored property costs a dynamic exclusivity check each time and a relaxed atomic a plain load.
    private let dispatchScheduled = Atomic<Bool>(false)

    private var filterAdded: Bool {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.filterAdded"); yield _filterAdded }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.filterAdded"); yield &_filterAdded }
    }

    private var calls: [UInt64: PendingCall] {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.calls"); yield _calls }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.calls"); yield &_calls }
    }

    var subscriptions: [UInt64: Subscription] {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.subscriptions"); yield _subscriptions }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.subscriptions"); yield &_subscriptions }
    }

    var owners: [String: OwnerWatch] {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.owners"); yield _owners }
        _modify {
            loop.kernel.assertOnLoopThread("ConnectionCore.owners")
            _ownersGeneration &+= 1
            yield &_owners
        }
    }

    /// Moves on with every change to `owners`: a property tap's cached look-up of its sender's watch is good while
    /// this has not moved (`PropertyTap.ownerLookup`).
    var ownersGeneration: UInt64 {
        loop.kernel.assertOnLoopThread("ConnectionCore.ownersGeneration")
        return _ownersGeneration
    }

    var taps: [UInt64: PropertyTap] {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.taps"); yield _taps }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.taps"); yield &_taps }
    }

    var handlers: [String: @Sendable (DBusMessage) -> DBusReply] {
        _read { loop.kernel.assertOnLoopThread("ConnectionCore.handlers"); yield _handlers }
        _modify { loop.kernel.assertOnLoopThread("ConnectionCore.handlers"); yield &_handlers }
    }

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// For tests and diagnostics.
    var pendingCallCount: Int { calls.count }

    func makeID() -> UInt64 {
        idCounter.add(1, ordering: .relaxed).newValue
    }

    // MARK: Opening and closing

    /// Connects (a local socket connect; authentication then runs through the loop's watches, never blocking) and
    /// sends Hello as an ordinary async call instead of the blocking `dbus_bus_register`.
    func open(address: String, completion: @escaping (Result<String, DBusError>) -> Void) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let conn = dbus_connection_open_private(address, &error) else {
            completion(.failure(Self.take(&error)))
            return
        }
        raw = conn
        dbus_connection_set_exit_on_disconnect(conn, 0)
        let data = Unmanaged.passUnretained(self).toOpaque()
        filterAdded = loop.kernel.install(on: conn) && dbus_connection_add_filter(conn, Self.filterFunction, data, nil) != 0
        guard filterAdded else {
            release()
            completion(.failure(DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "Cannot set up the connection")))
            return
        }
        dbus_connection_set_dispatch_status_function(conn, { _, status, data in
            Unmanaged<ConnectionCore>.fromOpaque(data!)._withUnsafeGuaranteedRef { $0.statusChanged(status) }
        }, data, nil)
        connected.store(true, ordering: .releasing)
        startCall(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "Hello",
                  body: [], timeoutMs: 25_000) { [self] result in
            switch result {
            case .success(let body):
                guard let name = body.first?.string, let conn = raw else {
                    shutDown(.disconnected("Hello failed"))
                    completion(.failure(.unexpectedReply("Hello", body)))
                    return
                }
                _ = dbus_bus_set_unique_name(conn, name)
                canPassFDs.store(dbus_connection_can_send_type(conn, TypeCode.unixFD) != 0, ordering: .releasing)
                completion(.success(name))
            case .failure(let error):
                shutDown(error)
                completion(.failure(error))
            }
        }
        statusChanged(dbus_connection_get_dispatch_status(conn))
    }

    /// Fails every pending call, finishes every stream and releases the libdbus connection.
    func shutDown(_ reason: DBusError) {
        connected.store(false, ordering: .releasing)
        let pendingCalls = calls
        calls.removeAll()
        for call in pendingCalls.values {
            dbus_pending_call_cancel(call.pending)
            dbus_pending_call_unref(call.pending)
        }
        for call in pendingCalls.values { call.completion(.failure(reason)) }
        failOwnerWatches(reason)
        let subs = subscriptions
        subscriptions.removeAll()
        for sub in subs.values { sub.continuation.finish() }
        handlers.removeAll()
        // Not from inside libdbus's dispatch (this may run in the filter): release on the next loop turn.
        loop.execute { [self] in release() }
    }

    private func release() {
        guard let conn = raw else { return }
        raw = nil
        loop.kernel.cancelDispatch(self)        // the kernel borrows the core until its dispatch (`scheduleDispatch`)
        dbus_connection_set_dispatch_status_function(conn, nil, nil, nil)
        // Removing a filter that was never added is a (fatal) libdbus check failure.
        if filterAdded { dbus_connection_remove_filter(conn, Self.filterFunction, Unmanaged.passUnretained(self).toOpaque()) }
        filterAdded = false
        dbus_connection_close(conn)
        dbus_connection_unref(conn)
    }

    static func take(_ error: inout CDBus.DBusError) -> DBusError {
        let result = DBusError(name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                               message: error.message.map { String(cString: $0) } ?? "")
        dbus_error_free(&error)
        return result
    }

    // MARK: Dispatch

    private func statusChanged(_ status: DBusDispatchStatus) {
        guard status == DBUS_DISPATCH_DATA_REMAINS, !dispatchScheduled.load(ordering: .relaxed) else { return }
        dispatchScheduled.store(true, ordering: .relaxed)
        loop.kernel.scheduleDispatch(self)
    }

    func dispatch() {
        dispatchScheduled.store(false, ordering: .relaxed)
        while let conn = raw, dbus_connection_dispatch(conn) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// libdbus's callbacks borrow the core rather than retain it. They run inside `dispatch` or inside a watch's
    /// read (which only schedules a dispatch), both on the loop thread while the core is open: it goes only after
    /// `release`, which runs from the loop's work queue and removes them first. A pending call's weak reference
    /// gives the core a side table, where every retain and release takes the slow path: these were about half of
    /// those per signal.
    private static let filterFunction: DBusHandleMessageFunction = { _, message, data in
        Unmanaged<ConnectionCore>.fromOpaque(data!)._withUnsafeGuaranteedRef { $0.filter(message!) }
    }

    private func filter(_ message: OpaquePointer) -> DBusHandlerResult {
        switch dbus_message_get_type(message) {
        case DBUS_MESSAGE_TYPE_SIGNAL:
            // The member is read once, here: each header field read is a look-up in libdbus (about a hundred
            // instructions), and `dbus_message_is_signal` on every signal read it and the interface once more.
            let member = dbus_message_get_member(message)
            if let member, strcmp(member, "Disconnected") == 0,
               dbus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") != 0 {
                shutDown(.disconnected("The connection to the bus was lost"))
            } else {
                deliverSignal(message, member: member)
                // Nothing after this filter wants a signal (no object paths are registered with libdbus), and
                // "not yet handled" would send every one through libdbus's object-tree lookup, which splits the
                // path into freshly allocated components under the connection lock: a notification's worth of
                // malloc/free and locking on the signal path.
                return DBUS_HANDLER_RESULT_HANDLED
            }
        case DBUS_MESSAGE_TYPE_METHOD_CALL:
            if handleMethodCall(message) { return DBUS_HANDLER_RESULT_HANDLED }
        default:
            break
        }
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    // MARK: Outgoing messages

    /// Sends a method call; `completion` runs on the loop thread exactly once. Returns the call's id (nil when it
    /// failed at once), usable with `cancelCall`.
    @discardableResult
    func startCall(id: UInt64? = nil, destination: String, path: String, interface: String, member: String,
                   body: [DBusValue], timeoutMs: Int32, completion: @escaping Completion) -> UInt64? {
        guard let conn = raw, connected.load(ordering: .acquiring) else {
            completion(.failure(.disconnected()))
            return nil
        }
        let message: OpaquePointer
        do throws(DBusError) {
            message = try Self.methodCall(destination: destination, path: path, interface: interface, member: member)
            defer { dbus_message_unref(message) }
            try Marshalling.append(body, to: message)
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(conn, message, &pending, timeoutMs) != 0 else {
                throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "Cannot send \(member)")
            }
            guard let pending else {
                if dbus_message_contains_unix_fds(message) != 0 && dbus_connection_can_send_type(conn, TypeCode.unixFD) == 0 {
                    throw DBusError(name: "org.freedesktop.DBus.Error.NotSupported", message: "The connection cannot pass file descriptors")
                }
                throw .disconnected()
            }
            let id = id ?? makeID()
            calls[id] = PendingCall(pending: pending, completion: completion)
            let token = Unmanaged.passRetained(CallToken(core: self, id: id)).toOpaque()
            dbus_pending_call_set_notify(pending, { _, data in
                let token = Unmanaged<CallToken>.fromOpaque(data!).takeUnretainedValue()
                token.core?.completeCall(token.id)
            }, token, { data in
                Unmanaged<CallToken>.fromOpaque(data!).release()
            })
            // The notify function never fires for a reply that arrived before it was set.
            if dbus_pending_call_get_completed(pending) != 0 { completeCall(id) }
            return id
        } catch {
            completion(.failure(error))
            return nil
        }
    }

    private func completeCall(_ id: UInt64) {
        guard let call = calls.removeValue(forKey: id) else { return }
        let reply = dbus_pending_call_steal_reply(call.pending)
        dbus_pending_call_unref(call.pending)
        guard let reply else {
            call.completion(.failure(DBusError(name: DBusError.noReplyName, message: "No reply")))
            return
        }
        defer { dbus_message_unref(reply) }
        let body = Marshalling.decodeBody(reply)
        if dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_ERROR {
            var name = dbus_message_get_error_name(reply).map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            // libdbus completes calls pending at disconnection with NoReply; callers must see why.
            if name == DBusError.noReplyName, let conn = raw, dbus_connection_get_is_connected(conn) == 0 {
                name = DBusError.disconnectedName
            }
            call.completion(.failure(DBusError(name: name, message: body.first?.string ?? "")))
        } else {
            call.completion(.success(body))
        }
    }

    /// Cancels the pending call (its reply, if it comes, is dropped by libdbus).
    func cancelCall(_ id: UInt64) {
        guard let call = calls.removeValue(forKey: id) else { return }
        dbus_pending_call_cancel(call.pending)
        dbus_pending_call_unref(call.pending)
        call.completion(.failure(DBusError(name: DBusError.cancelledName, message: "The call was cancelled")))
    }

    /// A method call nobody waits for (RemoveMatch): flagged no-reply so the bus sends nothing back.
    func sendWithoutReply(destination: String, path: String, interface: String, member: String, body: [DBusValue]) {
        guard let conn = raw, connected.load(ordering: .acquiring),
              let message = try? Self.methodCall(destination: destination, path: path, interface: interface, member: member)
        else { return }
        defer { dbus_message_unref(message) }
        dbus_message_set_no_reply(message, 1)
        guard (try? Marshalling.append(body, to: message)) != nil else { return }
        _ = dbus_connection_send(conn, message, nil)
    }

    func emitSignal(path: String, interface: String, member: String, body: [DBusValue]) throws(DBusError) {
        guard let conn = raw, connected.load(ordering: .acquiring) else { throw .disconnected() }
        try Self.validate(path: path, interface: interface, member: member)
        guard let message = dbus_message_new_signal(path, interface, member) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "Cannot create a signal")
        }
        defer { dbus_message_unref(message) }
        try Marshalling.append(body, to: message)
        guard dbus_connection_send(conn, message, nil) != 0 else { throw .disconnected() }
    }

    /// libdbus aborts on invalid names (its argument checks are fatal), so they are checked here first.
    static func methodCall(destination: String, path: String, interface: String, member: String) throws(DBusError) -> OpaquePointer {
        guard dbus_validate_bus_name(destination, nil) != 0 else { throw .invalidArgs("Invalid bus name '\(destination)'") }
        try validate(path: path, interface: interface, member: member)
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "Cannot create a method call")
        }
        return message
    }

    static func validate(path: String, interface: String, member: String) throws(DBusError) {
        guard dbus_validate_path(path, nil) != 0 else { throw .invalidArgs("Invalid object path '\(path)'") }
        guard dbus_validate_interface(interface, nil) != 0 else { throw .invalidArgs("Invalid interface '\(interface)'") }
        guard dbus_validate_member(member, nil) != 0 else { throw .invalidArgs("Invalid member '\(member)'") }
    }

    // MARK: Exported handlers

    private func handleMethodCall(_ message: OpaquePointer) -> Bool {
        guard !handlers.isEmpty, let pathPointer = dbus_message_get_path(message),
              let handler = handlers[String(cString: pathPointer)], let conn = raw else { return false }
        let reply = handler(Marshalling.decodeMessage(message))
        guard dbus_message_get_no_reply(message) == 0 else { return true }
        var outgoing: OpaquePointer?
        switch reply {
        case .values(let values):
            outgoing = dbus_message_new_method_return(message)
            if let out = outgoing, (try? Marshalling.append(values, to: out)) == nil {
                dbus_message_unref(out)
                outgoing = dbus_message_new_error(message, DBusError.invalidArgsName, "The handler's reply cannot be marshalled")
            }
        case .error(let error):
            let name = dbus_validate_error_name(error.name, nil) != 0 ? error.name : "org.freedesktop.DBus.Error.Failed"
            outgoing = dbus_message_new_error(message, name, error.message.utf8.contains(0) ? "" : error.message)
        case .noReply:
            outgoing = nil
        }
        if let outgoing {
            _ = dbus_connection_send(conn, outgoing, nil)
            dbus_message_unref(outgoing)
        }
        return true
    }
}

/// The bus daemon's own coordinates.
enum Bus {
    static let name = "org.freedesktop.DBus"
    static let path = "/org/freedesktop/DBus"
    static let interface = "org.freedesktop.DBus"
}

/// What an exported handler answers to a method call.
public enum DBusReply: Sendable {
    case values([DBusValue])
    case error(DBusError)
    /// Never answer (the caller then times out with NoReply); meant for tests.
    case noReply
}
