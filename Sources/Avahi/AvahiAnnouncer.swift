import DBus
import Logging

/// Announces one service over mDNS through avahi-daemon's D-Bus API (docs/configuration.md#esphome_proxy): Home
/// Assistant discovers the ESPHome proxy this way.
///
/// Everything runs as async D-Bus calls on the connection's own loop, so nothing here blocks the caller. Without
/// avahi-daemon on the system bus there is one warning and nothing else (the proxy still works when added by host and
/// port); when avahi-daemon appears later, or restarts, the service is announced again, and so it is after a name
/// collision (under `name-2`, `name-3`…) and after avahi-daemon re-registers its host name. `stop()` withdraws it.
///
/// One consumer task handles avahi's signals and the bus's owner changes in order, so no two steps of an announcement
/// interleave (the same shape as `BlueZClient`).
public actor AvahiAnnouncer {
    public nonisolated let events: AsyncStream<AvahiEvent>
    private let eventSink: AsyncStream<AvahiEvent>.Continuation
    private let connection: DBusConnection
    private let service: AvahiService
    private let logger: Logger
    private let callTimeout: Duration

    private enum Input: Sendable {
        case owner(String?)
        case signal(DBusMessage)
    }

    private var owner: String?
    private var ownerKnown = false
    private var group: String?
    /// The group holds the service and is committed: a second "running" (the signal and the answer to `GetState` after
    /// avahi-daemon starts) announces nothing again.
    private var committed = false
    /// The name announced now (the service's, or an alternative after collisions).
    private var name: String
    private var collisions = 0
    private var warned = false
    /// Set by `stop()`: a step that was awaiting avahi when it came must not announce anything after it.
    private var stopped = false
    private var tasks: [Task<Void, Never>] = []
    private var inputSink: AsyncStream<Input>.Continuation?

    public init(connection: DBusConnection, service: AvahiService, logger: Logger = Logger(label: "gattbridge.avahi"),
                callTimeout: Duration = .seconds(10)) {
        self.connection = connection
        self.service = service
        self.logger = logger
        self.callTimeout = callTimeout
        name = service.name
        (events, eventSink) = AsyncStream.makeStream(of: AvahiEvent.self, bufferingPolicy: .bufferingNewest(64))
    }

    /// Starts following avahi-daemon and announces as soon as it runs. Returns once the subscriptions are in place
    /// (the announcement itself follows on the consumer task).
    public func start() async {
        guard inputSink == nil else { return }
        let signals: AsyncStream<DBusMessage>, owners: AsyncStream<DBusMessage>
        do {
            signals = try await connection.subscribe(MatchRule(sender: AvahiNames.service))
            owners = try await connection.subscribe(MatchRule(
                sender: AvahiNames.bus, interface: AvahiNames.bus, member: "NameOwnerChanged",
                path: AvahiNames.busPath, arg0: AvahiNames.service))
        } catch {
            report(.failed("cannot follow avahi-daemon on the system bus: \(error)"), level: .warning)
            return
        }
        let (inputs, sink) = AsyncStream.makeStream(of: Input.self)
        inputSink = sink
        tasks.append(Task.detached {
            for await message in signals { sink.yield(.signal(message)) }
        })
        tasks.append(Task.detached {
            for await message in owners {
                if let change = NameOwnerChanged(message) { sink.yield(.owner(change.newOwner.isEmpty ? nil : change.newOwner)) }
            }
        })
        tasks.append(Task { [weak self] in
            for await input in inputs {
                guard let self else { return }
                await self.handle(input)
            }
        })
        // After the subscriptions: an owner change from here on arrives as a signal too, and is handled in order.
        let current: String?
        do {
            current = try await connection.getNameOwner(AvahiNames.service, timeout: callTimeout)
        } catch {
            current = nil
        }
        sink.yield(.owner(current))
    }

    /// Withdraws the service (`EntryGroup.Free`) and stops following avahi-daemon; `events` ends.
    public func stop() async {
        stopped = true
        for task in tasks { task.cancel() }
        tasks = []
        inputSink?.finish()
        inputSink = nil
        if let group, owner != nil {
            _ = try? await connection.call(destination: AvahiNames.service, path: group, interface: AvahiNames.entryGroup,
                                           member: "Free", timeout: callTimeout)
        }
        group = nil
        eventSink.finish()
    }

    // MARK: inputs

    private func handle(_ input: Input) async {
        guard !stopped else { return }
        switch input {
        case .owner(let newOwner):
            await ownerChanged(to: newOwner)
        case .signal(let message):
            guard message.kind == .signal, message.sender != nil, message.sender == owner,
                  message.member == "StateChanged", case .int32(let state)? = message.body.first else { return }
            if message.interface == AvahiNames.server, message.path == "/" {
                await serverState(state)
            } else if message.interface == AvahiNames.entryGroup, message.path == group {
                let error = message.body.count > 1 ? message.body[1].string ?? "" : ""
                await groupState(state, error: error)
            }
        }
    }

    private func ownerChanged(to newOwner: String?) async {
        if ownerKnown, newOwner == owner { return }
        let hadOwner = owner != nil
        ownerKnown = true
        owner = newOwner
        group = nil    // the old daemon's objects went with it
        committed = false
        guard newOwner != nil else {
            if hadOwner {
                report(.withdrawn, level: .warning, "avahi-daemon left the system bus: the service is not announced until it returns")
            } else if !warned {
                warned = true
                report(.unavailable("avahi-daemon is not on the system bus: \"\(service.name)\" (\(service.type)) is not "
                    + "announced over mDNS; add it by host and port, port \(service.port)"), level: .warning)
            }
            return
        }
        if hadOwner { logger.info("avahi-daemon restarted: announcing again", metadata: ["name": "\(name)"]) }
        do {
            let body = try await connection.call(destination: AvahiNames.service, path: "/", interface: AvahiNames.server,
                                                 member: "GetState", timeout: callTimeout)
            if case .int32(let state)? = body.first { await serverState(state) }
        } catch {
            report(.failed("cannot ask avahi-daemon for its state: \(error)"), level: .warning)
        }
    }

    /// avahi's server states: 1 registering, 2 running, 3 collision (of the host name), 4 failure. A service is
    /// added only while running; on a host name change avahi's own clients drop their entries and add them again
    /// once it runs (its examples' rule), since the records name the host.
    private func serverState(_ state: Int32) async {
        switch state {
        case AvahiNames.serverRunning:
            if !committed { await announce() }
        case AvahiNames.serverRegistering, AvahiNames.serverCollision:
            if let group, committed {
                committed = false
                _ = try? await call(group, AvahiNames.entryGroup, "Reset")
                report(.withdrawn, level: .info, "avahi-daemon is registering its host name: announcing again once it runs")
            }
        default:
            report(.failed("avahi-daemon is in state \(state) (failure): nothing is announced"), level: .warning)
        }
    }

    /// Entry group states: 0 uncommitted, 1 registering, 2 established, 3 collision, 4 failure.
    private func groupState(_ state: Int32, error: String) async {
        switch state {
        case AvahiNames.groupEstablished:
            report(.announced(name: name), level: .info, "announced over mDNS")
        case AvahiNames.groupCollision:
            await rename()
        case AvahiNames.groupFailure:
            report(.failed("avahi-daemon could not announce \"\(name)\": \(error)"), level: .warning)
        default:
            break
        }
    }

    // MARK: announcing

    private func announce() async {
        do throws(DBusError) {
            committed = false
            if let group {
                _ = try await call(group, AvahiNames.entryGroup, "Reset")
            } else {
                let body = try await connection.call(destination: AvahiNames.service, path: "/", interface: AvahiNames.server,
                                                     member: "EntryGroupNew", timeout: callTimeout)
                guard case .objectPath(let path)? = body.first else {
                    report(.failed("EntryGroupNew answered without a path"), level: .warning)
                    return
                }
                guard !stopped else {
                    _ = try? await call(path, AvahiNames.entryGroup, "Free")
                    return
                }
                group = path
            }
            try await addAndCommit()
        } catch {
            report(.failed("cannot announce \"\(name)\" through avahi-daemon: \(error)"), level: .warning)
        }
    }

    /// AddService then Commit; a name another local service holds (`CollisionError` from AddService) is replaced
    /// with the next alternative at once.
    private func addAndCommit() async throws(DBusError) {
        guard let group, !stopped else { return }
        while true {
            do throws(DBusError) {
                _ = try await call(group, AvahiNames.entryGroup, "AddService", [
                    .int32(AvahiNames.interfaceUnspecified), .int32(AvahiNames.protocolUnspecified), .uint32(0),
                    .string(name), .string(service.type), .string(""), .string(""), .uint16(service.port),
                    .array("ay", service.txtBytes.map { .byteArray($0) }),
                ])
                break
            } catch where error.name == AvahiNames.collisionError && collisions < AvahiNames.maximumCollisions {
                nextName()
            }
        }
        guard !stopped else { return }
        _ = try await call(group, AvahiNames.entryGroup, "Commit")
        committed = true
    }

    private func rename() async {
        guard collisions < AvahiNames.maximumCollisions, let group else {
            report(.failed("\"\(name)\" collides on the network after \(collisions) other names; giving up"), level: .warning)
            return
        }
        nextName()
        committed = false
        do throws(DBusError) {
            _ = try await call(group, AvahiNames.entryGroup, "Reset")
            try await addAndCommit()
        } catch {
            report(.failed("cannot announce \"\(name)\" through avahi-daemon: \(error)"), level: .warning)
        }
    }

    private func nextName() {
        let old = name
        collisions += 1
        name = AvahiService.alternativeName(service.name, attempt: collisions)
        report(.renamed(from: old, to: name), level: .warning, "the mDNS name is taken: trying another")
    }

    private func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [])
        async throws(DBusError) -> [DBusValue] {
        try await connection.call(destination: AvahiNames.service, path: path, interface: interface, member: member,
                                  body: body, timeout: callTimeout)
    }

    private func report(_ event: AvahiEvent, level: Logger.Level, _ message: String? = nil) {
        let text: String
        switch event {
        case .unavailable(let why), .failed(let why): text = why
        default: text = message ?? "\(event)"
        }
        logger.log(level: level, "\(text)", metadata: ["name": "\(name)", "type": "\(service.type)"])
        eventSink.yield(event)
    }
}

/// avahi-daemon's D-Bus names and constants (avahi's `org.freedesktop.Avahi.*.xml` and `avahi-common/defs.h`).
enum AvahiNames {
    static let service = "org.freedesktop.Avahi"
    static let server = "org.freedesktop.Avahi.Server"
    static let entryGroup = "org.freedesktop.Avahi.EntryGroup"
    static let collisionError = "org.freedesktop.Avahi.CollisionError"
    static let bus = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"
    /// AVAHI_IF_UNSPEC, AVAHI_PROTO_UNSPEC: every interface, IPv4 and IPv6.
    static let interfaceUnspecified: Int32 = -1
    static let protocolUnspecified: Int32 = -1
    static let serverRegistering: Int32 = 1, serverRunning: Int32 = 2, serverCollision: Int32 = 3
    static let groupEstablished: Int32 = 2, groupCollision: Int32 = 3, groupFailure: Int32 = 4
    /// Alternatives tried before giving up: a network that takes this many is misconfigured, not busy.
    static let maximumCollisions = 20
}
