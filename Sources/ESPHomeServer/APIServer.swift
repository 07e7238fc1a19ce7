import ESPHomeAPI
import Glibc
import LoopHosting
import Synchronization

/// A client of the server, unique for the server's life.
public struct APIClientID: Hashable, Sendable, CustomStringConvertible {
    public let value: Int
    public var description: String { "client \(value)" }
}

/// What the server tells its owner, on the host's thread. A client's messages arrive only once its connection is
/// ready (after the Noise handshake, with a key), in the order sent.
public protocol APIServerDelegate: AnyObject, Sendable {
    func clientReady(_ client: APIClientID, peer: String)
    func received(_ message: APIConnection.Message, from client: APIClientID)
    /// The client is gone (closed by either side); `reason` is nil for a client that left on its own.
    func clientClosed(_ client: APIClientID, reason: APIServerCloseReason?)
}

public enum APIServerCloseReason: Sendable, Equatable, CustomStringConvertible {
    case connection(APIConnection.CloseReason)
    /// The client read too little of what was sent to it (`APIServerLimits.queuedBytes`).
    case notReading
    /// The client completed no handshake, or sent nothing, in time.
    case timedOut
    case tooManyClients
    /// The owner closed it (a Disconnect, the server stopping).
    case closedByServer

    public var description: String {
        switch self {
        case .connection(let reason): "\(reason)"
        case .notReading: "not reading what it is sent"
        case .timedOut: "timed out"
        case .tooManyClients: "too many clients"
        case .closedByServer: "closed by the bridge"
        }
    }
}

public struct APIServerLimits: Sendable {
    /// Clients at once (Home Assistant is one; a second tool another).
    public var clients = 8
    /// Bytes queued for a client that does not read them; past it the client is closed.
    public var queuedBytes = 256 * 1024
    /// Bytes read from one client in one turn of the loop, so that a flooding client cannot hold the loop.
    public var readPerTurn = 64 * 1024
    /// Time to complete the handshake.
    public var handshake: Duration = .seconds(30)
    /// Silence after which a client is dropped (aioesphomeapi pings every 20 s).
    public var idle: Duration = .seconds(180)

    public init() {}
}

/// The ESPHome API's TCP server: the listening socket and each client are sources of the host's `poll` (in the daemon
/// the D-Bus loop's), so the server has no thread and costs no wake-up while idle. Each client's bytes go through its
/// own `APIConnection`; every call into the sockets is made on the host's thread.
///
/// Memory per client is bounded: what it sends by the frame reader's 64 KiB bound, what waits for it by
/// `APIServerLimits.queuedBytes`.
public final class APIServer: @unchecked Sendable {
    private struct Client {
        let fd: Int32
        let peer: String
        var connection: APIConnection
        var outbound: [UInt8] = []
        var sent = 0
        /// Closed once `outbound` is flushed (a refusal the client should see).
        var closeAfterFlush: APIServerCloseReason?
        var deadline: Int64
        var ready = false
    }

    public let listen: String
    private let security: APIConnection.Security
    private let identity: APIConnection.Identity
    private let limits: APIServerLimits
    private let host: any LoopHost
    private weak var delegate: (any APIServerDelegate)?
    private let boundPort = Atomic<UInt16>(0)

    // Host-thread only, hence the `@unchecked Sendable`.
    @exclusivity(unchecked) private var _state = State()
    private struct State {
        var listenFD: Int32 = -1
        var clients: [APIClientID: Client] = [:]
        var nextID = 1
        var running = false
    }

    private var state: State {
        _read { precondition(host.isHostThread, "APIServer state off the host thread"); yield _state }
        _modify { precondition(host.isHostThread, "APIServer state off the host thread"); yield &_state }
    }

    public init(listen: String, security: APIConnection.Security, identity: APIConnection.Identity,
                limits: APIServerLimits = APIServerLimits(), host: any LoopHost, delegate: any APIServerDelegate) {
        self.listen = listen
        self.security = security
        self.identity = identity
        self.limits = limits
        self.host = host
        self.delegate = delegate
    }

    public enum StartError: Error, Equatable, CustomStringConvertible {
        case badListenAddress(String)
        case listen(ListenAddress.Failure)

        public var description: String {
            switch self {
            case .badListenAddress(let text): "bad listen address \(text)"
            case .listen(.addressInUse(let text)): "\(text) is in use"
            case .listen(.cannotListen(let text, let code)): "cannot listen on \(text): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The port listened on once started (the one the kernel chose for port 0), else 0.
    public var port: UInt16 { boundPort.load(ordering: .acquiring) }

    /// Binds and listens now (from any thread; neither blocks), then serves on the host's thread from its next turn.
    public func start() throws(StartError) {
        guard let address = ListenAddress(listen) else { throw .badListenAddress(listen) }
        let socket: (fd: Int32, port: UInt16)
        do throws(ListenAddress.Failure) {
            socket = try address.listen(backlog: 16, text: listen)
        } catch {
            throw .listen(error)
        }
        boundPort.store(socket.port, ordering: .releasing)
        host.execute { [self] in
            state.listenFD = socket.fd
            state.running = true
            host.attach(interest: { [weak self] in
                guard let self, state.running else { return LoopInterest(fd: -1, events: 0, deadline: 0) }
                return LoopInterest(fd: state.listenFD, events: Int16(POLLIN), deadline: .max)
            }, serve: { [weak self] _ in
                guard let self, state.running else { return false }
                acceptClients()
                return true
            })
        }
    }

    /// Closes every client and the listening socket, on the host's thread (from any thread).
    public func stop() {
        host.execute { [self] in
            guard state.running else { return }
            for id in Array(state.clients.keys) { drop(id, reason: .closedByServer) }
            Glibc.close(state.listenFD)
            state.listenFD = -1
            state.running = false
            boundPort.store(0, ordering: .releasing)
        }
    }

    /// Sends `message` to `client` (on the host's thread). Dropped for a client that is gone or not ready; a client
    /// that lets more than `queuedBytes` wait is closed.
    public func send(_ message: APIConnection.Message, to client: APIClientID) {
        guard var entry = state.clients[client], entry.closeAfterFlush == nil,
              let bytes = entry.connection.frame(message) else { return }
        entry.outbound += bytes
        state.clients[client] = entry
        flush(client)
    }

    /// Closes `client` once what was sent to it is flushed (on the host's thread).
    public func close(_ client: APIClientID) {
        guard var entry = state.clients[client] else { return }
        entry.closeAfterFlush = .closedByServer
        state.clients[client] = entry
        flush(client)
    }

    /// Clients connected and ready, for the owner's bookkeeping and the tests.
    public var readyClients: [APIClientID] {
        state.clients.filter { $0.value.ready }.map(\.key)
    }

    private func acceptClients() {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(state.listenFD, $0, &length)
                }
            }
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard state.clients.count < limits.clients else {
                Glibc.close(fd)
                continue
            }
            var on: Int32 = 1
            // Messages are small and each answers a request: Nagle would hold every answer for a round trip.
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let id = APIClientID(value: state.nextID)
            state.nextID += 1
            let connection = APIConnection(security: security, identity: identity)
            let ready = connection.isReady
            let peer = peerText(&storage)
            state.clients[id] = Client(fd: fd, peer: peer, connection: connection,
                                       deadline: monotonicNanoseconds() + nanoseconds(ready ? limits.idle : limits.handshake),
                                       ready: ready)
            // Keyed by id, not descriptor: a descriptor is reused by the next client as soon as this one closes.
            host.attach(interest: { [weak self] in
                guard let self, let client = state.clients[id] else { return LoopInterest(fd: -1, events: 0, deadline: 0) }
                let writing = client.outbound.count > client.sent
                return LoopInterest(fd: client.fd, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0),
                                    deadline: client.deadline)
            }, serve: { [weak self] revents in
                guard let self, state.clients[id] != nil else { return false }
                serve(id, revents)
                return state.clients[id] != nil
            })
            if ready { delegate?.clientReady(id, peer: peer) }
        }
    }

    private func serve(_ id: APIClientID, _ revents: Int16) {
        if revents & Int16(POLLOUT) != 0 { flush(id) }
        if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 { readFrom(id) }
        if let client = state.clients[id], client.deadline <= monotonicNanoseconds() { drop(id, reason: .timedOut) }
    }

    private func readFrom(_ id: APIClientID) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var total = 0
        while total < limits.readPerTurn {
            guard let entry = state.clients[id], entry.closeAfterFlush == nil else { return }
            let count = buffer.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, 0) }
            if count == 0 {
                drop(id, reason: nil)
                return
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { drop(id, reason: nil) }
                return
            }
            total += count
            handle(buffer[..<count], from: id)
        }
    }

    private func handle(_ bytes: ArraySlice<UInt8>, from id: APIClientID) {
        guard var entry = state.clients[id] else { return }
        let wasReady = entry.ready
        let output = entry.connection.receive(bytes)
        entry.outbound += output.bytes
        entry.ready = entry.connection.isReady
        entry.deadline = monotonicNanoseconds() + nanoseconds(entry.ready ? limits.idle : limits.handshake)
        if let reason = output.closing { entry.closeAfterFlush = .connection(reason) }
        state.clients[id] = entry
        if entry.ready && !wasReady { delegate?.clientReady(id, peer: entry.peer) }
        for message in output.messages {
            guard state.clients[id] != nil else { break }
            delegate?.received(message, from: id)
        }
        flush(id)
    }

    /// Writes what waits for the client as far as its socket takes it; the rest waits for writability.
    private func flush(_ id: APIClientID) {
        guard var entry = state.clients[id] else { return }
        while entry.sent < entry.outbound.count {
            let count = entry.outbound.withUnsafeBytes {
                Glibc.send(entry.fd, $0.baseAddress! + entry.sent, $0.count - entry.sent, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                drop(id, reason: nil)
                return
            }
            entry.sent += count
        }
        if entry.sent == entry.outbound.count {
            entry.outbound.removeAll(keepingCapacity: entry.outbound.capacity <= 16 * 1024)
            entry.sent = 0
        } else if entry.sent > 64 * 1024 {
            entry.outbound.removeFirst(entry.sent)
            entry.sent = 0
        }
        state.clients[id] = entry
        let waiting = entry.outbound.count - entry.sent
        if waiting == 0, let reason = entry.closeAfterFlush {
            drop(id, reason: reason)
        } else if waiting > limits.queuedBytes {
            drop(id, reason: .notReading)
        }
    }

    private func drop(_ id: APIClientID, reason: APIServerCloseReason?) {
        guard let entry = state.clients.removeValue(forKey: id) else { return }
        Glibc.close(entry.fd)
        delegate?.clientClosed(id, reason: reason)
    }

    private func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
