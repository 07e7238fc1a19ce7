import ESPHomeAPI
import ESPHomeServer
import LoopHosting
import Logging
import Synchronization

/// The proxy's clients (Home Assistant, a second tool) on the server's thread: each one's `APISession`, fed with its
/// messages, and what the proxy pushes to those subscribed (advertisements, scanner state). Everything but the
/// counters runs on the host's thread, where the server calls it; the feature hands its pushes over with
/// `LoopHost.execute`.
package final class ProxyClients: APIServerDelegate, @unchecked Sendable {
    private let host: any LoopHost
    private let identity: APISession.Identity
    private let logger: Logger
    /// Requests about peripherals (connect, GATT, pair…) and clients that left, for the feature; called on the host's
    /// thread, must not block.
    private let peripheralRequest: @Sendable (APIClientID, APIMessage) -> Void
    private let clientLeft: @Sendable (APIClientID) -> Void
    /// A client subscribed to advertisements (the feature sends it what is around now).
    private let subscribed: @Sendable (APIClientID) -> Void
    /// Clients subscribed to advertisements: the feature builds none while it is 0.
    private let listening = Atomic<Int>(0)

    // Host-thread only, hence the `@unchecked Sendable`.
    @exclusivity(unchecked) private var _sessions: [APIClientID: APISession] = [:]
    @exclusivity(unchecked) private var _status = APISession.Status()
    @exclusivity(unchecked) private var _server: APIServer?

    private var sessions: [APIClientID: APISession] {
        _read { precondition(host.isHostThread, "ProxyClients off the host thread"); yield _sessions }
        _modify { precondition(host.isHostThread, "ProxyClients off the host thread"); yield &_sessions }
    }

    private var status: APISession.Status {
        _read { precondition(host.isHostThread, "ProxyClients off the host thread"); yield _status }
        _modify { precondition(host.isHostThread, "ProxyClients off the host thread"); yield &_status }
    }

    package init(host: any LoopHost, identity: APISession.Identity, status: APISession.Status, logger: Logger,
                 peripheralRequest: @escaping @Sendable (APIClientID, APIMessage) -> Void = { _, _ in },
                 clientLeft: @escaping @Sendable (APIClientID) -> Void = { _ in },
                 subscribed: @escaping @Sendable (APIClientID) -> Void = { _ in }) {
        self.host = host
        self.identity = identity
        self.logger = logger
        self.peripheralRequest = peripheralRequest
        self.clientLeft = clientLeft
        self.subscribed = subscribed
        _status = status
    }

    /// Sends `message` to `client` (from any thread; at once on the host's).
    package func send(_ message: APIMessage, to client: APIClientID) {
        let framed = APIConnection.Message(message)
        guard host.isHostThread else {
            host.execute { [self] in _server?.send(framed, to: client) }
            return
        }
        _server?.send(framed, to: client)
    }

    /// The server whose clients these are; set once, before it starts.
    package func serve(_ server: APIServer) {
        _server = server
    }

    /// Whether any client wants advertisements now (from any thread).
    package var anyoneListening: Bool { listening.load(ordering: .relaxed) > 0 }

    /// Sends `batch` to every client subscribed to advertisements (from any thread).
    package func publish(_ batch: [APIMessage.RawAdvertisement]) {
        guard !batch.isEmpty else { return }
        let message = APIConnection.Message(APIMessage.bluetoothLERawAdvertisementsResponse(batch))
        host.execute { [self] in
            for (client, session) in sessions where session.wantsAdvertisements {
                _server?.send(message, to: client)
            }
        }
    }

    /// Tells every client the proxy is going (as ESPHome's server does on shutdown), so Home Assistant takes the end
    /// as expected and reconnects without a warning; call before the server stops (from any thread).
    package func goodbye() {
        host.execute { [self] in
            for client in sessions.keys {
                _server?.send(APIConnection.Message(APIMessage.disconnectRequest(reason: .unspecified)), to: client)
            }
        }
    }

    /// The proxy's state changed (from any thread): sent to the clients subscribed to it.
    package func update(_ change: @escaping @Sendable (inout APISession.Status) -> Void) {
        host.execute { [self] in
            let old = status
            change(&status)
            guard status != old else { return }
            for (client, session) in sessions {
                perform(session.changed(from: old, to: status), for: client)
            }
        }
    }

    package func clientReady(_ client: APIClientID, peer: String) {
        logger.info("Home Assistant proxy client connected", metadata: ["client": "\(client)", "peer": "\(peer)"])
        sessions[client] = APISession(identity: identity)
    }

    package func received(_ message: APIConnection.Message, from client: APIClientID) {
        guard var session = sessions[client] else { return }
        guard let decoded = APIMessage.decode(type: UInt16(clamping: message.type), payload: message.payload) else {
            logger.warning("proxy client sent a malformed message: closed",
                           metadata: ["client": "\(client)", "type": "\(message.type)"])
            _server?.close(client)
            return
        }
        let wasListening = session.wantsAdvertisements
        let actions = session.receive(decoded, status: status)
        sessions[client] = session
        if session.wantsAdvertisements != wasListening {
            listening.wrappingAdd(session.wantsAdvertisements ? 1 : -1, ordering: .relaxed)
        }
        perform(actions, for: client)
        if session.wantsAdvertisements && !wasListening { subscribed(client) }
    }

    package func clientClosed(_ client: APIClientID, reason: APIServerCloseReason?) {
        guard let session = sessions.removeValue(forKey: client) else {
            if let reason { logger.info("proxy connection refused: \(reason)", metadata: ["client": "\(client)"]) }
            return
        }
        if session.wantsAdvertisements { listening.wrappingSubtract(1, ordering: .relaxed) }
        clientLeft(client)
        logger.info("Home Assistant proxy client left\(reason.map { ": \($0)" } ?? "")",
                    metadata: ["client": "\(client)"])
    }

    private func perform(_ actions: [APISession.Action], for client: APIClientID) {
        for action in actions {
            switch action {
            case .send(let message):
                _server?.send(APIConnection.Message(message), to: client)
            case .close:
                _server?.close(client)
            case .setScannerMode(let mode):
                // BlueZ's discovery scans actively and its D-Bus API offers no passive discovery: the state the
                // client gets keeps saying "active".
                let asked = mode.rawValue == 0 ? "passive" : "active"
                logger.info("Home Assistant asked for scanner mode \(asked); the bridge's scan stays active")
                _server?.send(APIConnection.Message(APIMessage.bluetoothScannerStateResponse(
                    state: status.scannerState, mode: status.scannerMode, configuredMode: status.configuredMode)),
                    to: client)
            case .peripheral(let request):
                peripheralRequest(client, request)
            }
        }
    }
}

extension APIConnection.Message {
    init(_ message: APIMessage) {
        let (type, payload) = message.encoded()
        self.init(type: UInt32(type), payload: payload)
    }
}
