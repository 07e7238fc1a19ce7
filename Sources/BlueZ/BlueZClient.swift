import Bluetooth
import DBus
import Logging
import Synchronization

/// A client of bluetoothd: a live mirror of `org.bluez`'s objects plus the operations the bridge and CLI need.
///
/// All state changes arrive as D-Bus signals and are applied by one task, in bus order, so the mirror and the
/// `events()` streams never disagree. When bluetoothd restarts (the `org.bluez` owner changes, or vanishes and
/// returns) everything is dropped and re-read, because a restarted daemon (and BlueZoo) does not always
/// announce the removal of the objects it had.
public actor BlueZClient {
    public nonisolated let connection: DBusConnection
    let logger: Logger

    var mirror = ObjectMirror()
    /// Unique bus name of the current `org.bluez` owner; signals from anyone else are stale.
    var owner: String? {
        didSet { ownerName.withLock { $0 = owner } }
    }
    /// `owner`, readable from any thread: the pairing agent, answering on the D-Bus loop thread, takes calls only
    /// from it.
    public nonisolated let ownerName = Mutex<String?>(nil)
    let broadcaster = EventBroadcaster<BlueZEvent>()
    /// One GATT operation in flight per device (a lane per device path); holders are numbered operations.
    let operations = KeyedGate<UInt64>()
    var nextOperation: UInt64 = 0
    /// StartNotify subscribers: characteristic path → subscriber id → stream.
    var signalSinks: [String: [UInt64: SignalSink]] = [:] {
        didSet { untappedPaths.set(Set(signalSinks.filter { $0.value.values.contains { $0.tap == nil } }.keys)) }
    }
    /// Paths with a sink that needs the actor's copy of each value: taps must not consume their signals.
    let untappedPaths = SharedPathSet()
    var nextSinkID: UInt64 = 0
    private var tasks: [Task<Void, Never>] = []

    private enum Input: Sendable {
        case bluez(DBusMessage)
        case nameOwner(NameOwnerChanged)
    }

    init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Subscribes to org.bluez's signals, then reads its objects. Succeeds when bluetoothd is absent too
    /// (`isAvailable` is false until it appears).
    public static func connect(_ connection: DBusConnection,
                               logger: Logger = Logger(label: "gattbridge.bluez")) async throws(BlueZError) -> BlueZClient {
        let client = BlueZClient(connection: connection, logger: logger)
        try await client.start()
        return client
    }

    /// True while `org.bluez` has an owner on the bus.
    public var isAvailable: Bool { owner != nil }

    /// A new stream of every later event. Registration is immediate, so nothing emitted after this call is missed.
    public nonisolated func events() -> AsyncStream<BlueZEvent> {
        broadcaster.subscribe().stream
    }

    /// Stops following BlueZ; event and notification streams end. The D-Bus connection stays open (it is the caller's).
    public func shutdown() {
        for task in tasks { task.cancel() }
        tasks = []
        endAllSinks()
        broadcaster.finishAll()
    }

    deinit {
        for task in tasks { task.cancel() }
    }

    // MARK: Signal intake

    private func start() async throws(BlueZError) {
        let bluezSignals: AsyncStream<DBusMessage>
        let ownerSignals: AsyncStream<DBusMessage>
        do {
            // Subscribed before GetManagedObjects: a change between the snapshot and the subscription would be lost.
            bluezSignals = try await connection.subscribe(MatchRule(sender: BlueZNames.service))
            ownerSignals = try await connection.subscribe(MatchRule(
                sender: BlueZNames.bus, interface: BlueZNames.bus, member: "NameOwnerChanged",
                path: BlueZNames.busPath, arg0: BlueZNames.service))
        } catch {
            throw BlueZError.from(error)
        }
        // One merged stream keeps a single consumer, so a resync (which awaits GetManagedObjects) holds back later signals.
        let (inputs, input) = AsyncStream<Input>.makeStream()
        tasks.append(Task.detached {
            for await message in bluezSignals { input.yield(.bluez(message)) }
            input.finish()
        })
        tasks.append(Task.detached {
            for await message in ownerSignals {
                if let change = NameOwnerChanged(message) { input.yield(.nameOwner(change)) }
            }
            input.finish()
        })

        do {
            owner = try await connection.getNameOwner(BlueZNames.service)
        } catch {
            throw BlueZError.from(error)
        }
        if owner != nil { await resync() }

        tasks.append(Task { [weak self] in
            for await item in inputs {
                guard let self else { return }
                await self.handle(item)
            }
            await self?.connectionEnded()
        })
    }

    private func handle(_ input: Input) async {
        switch input {
        case .nameOwner(let change):
            let newOwner = change.newOwner.isEmpty ? nil : change.newOwner
            guard newOwner != owner else { return }
            logger.info("org.bluez owner changed", metadata: ["old": "\(owner ?? "-")", "new": "\(newOwner ?? "-")"])
            if owner != nil { vanish() }
            owner = newOwner
            if newOwner != nil {
                await resync()
                emit([.bluezAppeared])
            }
        case .bluez(let message):
            guard message.sender != nil, message.sender == owner else { return }
            apply(message)
        }
    }

    /// Re-reads every object. A failure leaves the mirror empty; later InterfacesAdded signals still fill it.
    private func resync() async {
        do {
            let snapshot = try await connection.getManagedObjects(destination: BlueZNames.service, path: BlueZNames.root)
            emit(mirror.replace(with: snapshot))
        } catch {
            logger.warning("GetManagedObjects on org.bluez failed", metadata: ["error": "\(error)"])
        }
    }

    private func vanish() {
        emit(mirror.clear())
        endAllSinks()
        emit([.bluezVanished])
    }

    private func connectionEnded() {
        if owner != nil { vanish() }
        owner = nil
        broadcaster.finishAll()
    }

    private func apply(_ message: DBusMessage) {
        switch (message.interface, message.member) {
        case (BlueZNames.objectManager, "InterfacesAdded"):
            guard let added = InterfacesAdded(message) else { return }
            emit(mirror.interfacesAdded(path: added.objectPath, interfaces: added.interfaces))
        case (BlueZNames.objectManager, "InterfacesRemoved"):
            guard let removed = InterfacesRemoved(message) else { return }
            emit(mirror.interfacesRemoved(path: removed.objectPath, interfaces: removed.interfaces))
        case (BlueZNames.properties, "PropertiesChanged"):
            guard let change = PropertiesChanged(message) else { return }
            if change.interface == BlueZNames.gattCharacteristic, let value = change.changed["Value"]?.bytes,
               let sinks = signalSinks[change.path] {
                for sink in sinks.values where sink.tap == nil { sink.continuation.yield(value) }
            }
            emit(mirror.propertiesChanged(path: change.path, interface: change.interface,
                                          changed: change.changed, invalidated: change.invalidated))
        case (BlueZNames.device, "Disconnected"):
            guard let path = message.path else { return }
            emit([.deviceDisconnected(path: path, reason: message.body.first?.string ?? "",
                                      message: message.body.dropFirst().first?.string ?? "")])
        default:
            break
        }
    }

    /// Publishes events and ends the notification streams they make pointless.
    func emit(_ events: [BlueZEvent]) {
        for event in events {
            switch event {
            case .deviceRemoved(let path, _), .adapterRemoved(let path):
                endSinks(under: path)
            case .gattRemoved(let path, _):
                endSinks(under: path)
            case .deviceChanged(let device, let changed) where changed.contains("Connected") && !device.connected:
                endSinks(under: device.path)
            default:
                break
            }
            broadcaster.yield(event)
        }
    }

    // MARK: Signal-path notification sinks

    func addSink(_ path: String, _ continuation: AsyncStream<[UInt8]>.Continuation, tap: SignalTap? = nil) -> UInt64 {
        nextSinkID += 1
        signalSinks[path, default: [:]][nextSinkID] = SignalSink(continuation: continuation, tap: tap)
        return nextSinkID
    }

    /// Removes one sink; true when it was still registered.
    func removeSink(_ path: String, _ id: UInt64) -> Bool {
        guard let sink = signalSinks[path]?.removeValue(forKey: id) else { return false }
        if signalSinks[path]?.isEmpty == true { signalSinks[path] = nil }
        sink.end()
        return true
    }

    private func endSinks(under path: String) {
        for sinkPath in signalSinks.keys where ObjectPath.isDescendant(sinkPath, of: path) {
            for sink in signalSinks.removeValue(forKey: sinkPath)!.values { sink.end() }
        }
    }

    private func endAllSinks() {
        let all = signalSinks
        signalSinks = [:]
        for sinks in all.values { for sink in sinks.values { sink.end() } }
    }

    // MARK: Helpers for the operation extensions

    /// A method call on org.bluez. A local timeout becomes `.timeout(what)`.
    func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [],
              timeout: Duration = .seconds(25), what: String) async throws(BlueZError) -> [DBusValue] {
        do {
            return try await connection.call(destination: BlueZNames.service, path: path, interface: interface,
                                             member: member, body: body, timeout: timeout)
        } catch {
            throw mapCallError(BlueZError.from(error), what: what)
        }
    }

    func mapCallError(_ error: BlueZError, what: String) -> BlueZError {
        switch error {
        case .noReply: .timeout(what)
        case .serviceUnknown where owner == nil: .bluezUnavailable
        default: error
        }
    }

    /// Runs `body` while holding the device's operation slot (FIFO among operations on that device).
    func serialized<T: Sendable>(_ path: String,
                                 _ body: () async throws(BlueZError) -> T) async throws(BlueZError) -> T {
        let lane = ObjectPath.device(of: path) ?? path
        nextOperation &+= 1
        let operation = nextOperation
        do {
            try await operations.acquire(operation, lane: lane)
        } catch {
            throw .cancelled
        }
        do throws(BlueZError) {
            let result = try await body()
            await operations.release(operation)
            return result
        } catch {
            await operations.release(operation)
            throw error
        }
    }

    enum WaitStep<T> {
        case done(T)
        case fail(BlueZError)
        case pending
    }

    /// Waits until `evaluate` (run now, then after every event, with that event) decides, or `timeout` passes.
    func waitFor<T: Sendable>(_ what: String, timeout: Duration,
                              _ evaluate: (BlueZEvent?) -> WaitStep<T>) async throws(BlueZError) -> T {
        let (id, stream) = broadcaster.subscribe()
        defer { broadcaster.finish(id) }
        switch evaluate(nil) {
        case .done(let value): return value
        case .fail(let error): throw error
        case .pending: break
        }
        let broadcaster = self.broadcaster
        let timer = Task.detached {
            try? await Task.sleep(for: timeout)
            broadcaster.finish(id)
        }
        defer { timer.cancel() }
        for await event in stream {
            switch evaluate(event) {
            case .done(let value): return value
            case .fail(let error): throw error
            case .pending: continue
            }
        }
        if Task.isCancelled { throw .cancelled }
        throw .timeout(what)
    }
}

/// A set of object paths written by the actor and read by taps on the D-Bus loop thread.
final class SharedPathSet: Sendable {
    private let paths = Mutex<Set<String>>([])
    /// Asked for every signal-path notification, where the set is almost always empty: answered without the lock
    /// or a hash of the path.
    private let empty = Atomic<Bool>(true)

    func set(_ newValue: Set<String>) {
        paths.withLock { paths in
            paths = newValue
            empty.store(newValue.isEmpty, ordering: .releasing)
        }
    }

    func contains(_ path: String) -> Bool {
        if empty.load(ordering: .acquiring) { return false }
        return paths.withLock { $0.contains(path) }
    }
}

/// One signal-path subscriber. With a `tap`, values go to its handler on the D-Bus loop thread and `continuation`
/// only signals the end; without, the actor yields each value to `continuation`.
struct SignalSink {
    var continuation: AsyncStream<[UInt8]>.Continuation
    var tap: SignalTap?

    func end() {
        tap?.cancel()
        continuation.finish()
    }
}
