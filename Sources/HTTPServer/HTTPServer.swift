import CMicroHTTPD
import Glibc
import LoopHosting
import Synchronization

/// The web page's HTTP server: one libmicrohttpd daemon with no thread of its own, served by an `LoopHost`
/// (in the daemon, the D-Bus loop). One `poll` descriptor (libmicrohttpd's epoll set: the listening socket and every
/// connection) and libmicrohttpd's timeout as the deadline, so that with no client there is no wake-up at all; a turn
/// is one `MHD_run`, which reads and writes what is ready without waiting and calls the handler for each complete
/// request. Every libmicrohttpd call is made on the host's thread; answers and stream bytes from other threads are
/// handed over through the host's `execute`, which resumes the suspended connection there.
///
/// The daemon pointer and the suspended exchanges are host-thread only (checked in debug builds), which is what
/// makes the `@unchecked Sendable` sound; `start` writes the pointer before the host is given the source, so the
/// host's queue orders that write before every read.
public final class HTTPServer: @unchecked Sendable {
    public let listen: String
    public let limits: HTTPServerLimits
    let handler: any HTTPHandler
    let host: any LoopHost

    private let started = Atomic<Bool>(false)
    private let boundPort = Atomic<UInt16>(0)

    @exclusivity(unchecked) private var _daemon: OpaquePointer?
    @exclusivity(unchecked) private var _epollFD: Int32 = -1
    /// Connections suspended by us (waiting for an answer, or a stream with nothing to send): libmicrohttpd must
    /// resume every one before it stops, or it aborts the process.
    @exclusivity(unchecked) private var _suspended: [ObjectIdentifier: Exchange] = [:]
    /// A connection was resumed since the last `MHD_run`. Without a thread of its own libmicrohttpd has no
    /// inter-thread channel in its epoll set, so nothing wakes the host for it: the next turn must come at once.
    @exclusivity(unchecked) private var _resumed = false

    private var daemon: OpaquePointer? {
        get { assertOnHost("HTTPServer.daemon"); return _daemon }
        set { assertOnHost("HTTPServer.daemon"); _daemon = newValue }
    }
    private var resumed: Bool {
        get { assertOnHost("HTTPServer.resumed"); return _resumed }
        set { assertOnHost("HTTPServer.resumed"); _resumed = newValue }
    }
    private var suspended: [ObjectIdentifier: Exchange] {
        _read { assertOnHost("HTTPServer.suspended"); yield _suspended }
        _modify { assertOnHost("HTTPServer.suspended"); yield &_suspended }
    }

    /// `listen`: see `ListenAddress` ("127.0.0.1:8780", "[::]:8780", "localhost:8780", …).
    public init(listen: String, limits: HTTPServerLimits = HTTPServerLimits(), handler: any HTTPHandler,
                host: any LoopHost) {
        self.listen = listen
        self.limits = limits
        self.handler = handler
        self.host = host
    }

    /// The port listened on once started (the one the kernel chose for port 0), else 0.
    public var port: UInt16 { boundPort.load(ordering: .acquiring) }

    /// Requests alive in this process, for the tests: a finished, refused or abandoned request holds nothing.
    public static var liveRequests: Int { Exchange.live.load(ordering: .relaxed) }

    /// Binds and listens now (from any thread), then serves on the host's thread from its next turn on.
    public func start() throws(HTTPServerError) {
        guard let address = ListenAddress(listen) else { throw .badListenAddress(listen) }
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { throw .alreadyStarted }
        let socket: (fd: Int32, port: UInt16)
        do throws(ListenAddress.Failure) {
            socket = try address.listen(backlog: Int32(limits.connections), text: listen)
        } catch {
            started.store(false, ordering: .releasing)
            switch error {
            case .addressInUse(let text): throw .addressInUse(text)
            case .cannotListen(let text, let code): throw .cannotListen(text, errno: code)
            }
        }
        let flags = gb_mhd_flags_base | gb_mhd_flag_error_log | (address.isIPv6 ? gb_mhd_flag_ipv6 : 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let timeout = UInt32(clamping: max(1, limits.connectionTimeout.components.seconds))
        guard let daemon = gb_mhd_start(flags, socket.fd, UInt32(clamping: limits.connections),
                                        limits.connectionMemory, timeout, accessHandler, context,
                                        requestCompleted, context) else {
            close(socket.fd)
            started.store(false, ordering: .releasing)
            throw .cannotStart(listen)
        }
        _daemon = daemon
        _epollFD = gb_mhd_epoll_fd(daemon)
        boundPort.store(socket.port, ordering: .releasing)
        // The source holds the server until it ends (after `stop`): the callbacks' unretained context stays valid.
        host.attach(interest: { [self] in interest() }, serve: { [self] _ in serve() })
    }

    /// Closes every connection (streams end, answers still awaited are dropped) and the listening socket. On the
    /// host's thread at once; from another it waits until the host has done it, so the host must still be running
    /// (stop the server before the loop). Idempotent. A server is started once: make a new one to listen again.
    public func stop() {
        if host.isHostThread {
            stopOnHost()
            return
        }
        let done = eventfd(0, Int32(EFD_CLOEXEC))
        precondition(done >= 0, "eventfd failed: errno \(errno)")
        host.execute { [self] in
            stopOnHost()
            var one: UInt64 = 1
            _ = write(done, &one, 8)
        }
        var value: UInt64 = 0
        while Glibc.read(done, &value, 8) < 0 && errno == EINTR {}
        close(done)
    }

    private func stopOnHost() {
        guard let daemon else { return }
        for exchange in suspended.values {
            exchange.suspended = false
            MHD_resume_connection(exchange.connection)
        }
        suspended.removeAll()
        MHD_stop_daemon(daemon)      // completes every request: each exchange is released, each stream ended
        self.daemon = nil
    }

    func assertOnHost(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
        precondition(host.isHostThread, "\(what()) used off the HTTP server's host thread", file: file, line: line)
        #endif
    }

    // MARK: The host's turn

    private func interest() -> LoopInterest {
        guard let daemon else { return LoopInterest(fd: -1, events: 0, deadline: 0) }  // stopped: end the source
        if resumed { return LoopInterest(fd: _epollFD, events: Int16(POLLIN), deadline: 0) }
        var milliseconds: UInt64 = 0
        let deadline = MHD_get_timeout(daemon, &milliseconds) == .YES
            ? monotonicNanoseconds() + Int64(min(milliseconds, 86_400_000)) * 1_000_000 : .max
        return LoopInterest(fd: _epollFD, events: Int16(POLLIN), deadline: deadline)
    }

    private func serve() -> Bool {
        guard let daemon else { return false }
        resumed = false
        MHD_run(daemon)
        return true
    }

    // MARK: Called back by libmicrohttpd, inside MHD_run on the host's thread

    fileprivate func access(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                            upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
                            state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let current = state.pointee else {
            return begin(connection, url: url, method: method, state: state)
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(current).takeUnretainedValue()
        switch exchange.phase {
        case .reading:
            if uploadSize.pointee > 0 {
                exchange.take(UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee), maxBody: limits.maxBody)
                uploadSize.pointee = 0
                // An endless chunked upload is read and dropped up to a bound, then the connection is closed.
                return exchange.discarded > 16 * limits.maxBody ? .NO : .YES
            }
            if exchange.discarded > 0 {
                exchange.phase = .answered
                return queue(.error(413, "request body over \(limits.maxBody) bytes"), on: connection)
            }
            exchange.phase = .waiting
            let request = exchange.request
            exchange.request.body = []
            handler.handle(request, HTTPResponder(exchange: exchange))
            return answer(exchange)
        case .waiting:
            return answer(exchange)
        case .answered:
            return .YES
        }
    }

    /// The first call for a request: its headers are in. Refuses what no handler should see; otherwise the body, if
    /// any, is read next.
    private func begin(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                       state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        var request = HTTPRequest(method: String(cString: method), path: "")
        var refusal: HTTPResponse?
        var address = sockaddr_storage()
        if gb_mhd_client_address(connection, &address) != 0 { request.peer = peerText(&address) }
        request.headers = Self.values(of: connection, kind: .HEADER_KIND).map {
            HTTPField($0.name.lowercased(), $0.value ?? "")
        }
        if !Self.methods.contains(request.method) {
            refusal = .error(405, "method not allowed")
        } else if let path = PercentDecoding.path(url) {
            request.path = path
        } else {
            refusal = .error(400, "bad path")
        }
        if refusal == nil {
            for item in Self.values(of: connection, kind: .GET_ARGUMENT_KIND, raw: true) {
                guard let name = item.raw.0.flatMap(PercentDecoding.decode),
                      let value = item.raw.1.map(PercentDecoding.decode) ?? "" else {
                    refusal = .error(400, "bad query")
                    break
                }
                request.query.append(HTTPField(name, value))
            }
        }
        if refusal == nil, let length = request.header("content-length"), let bytes = Int(length),
           bytes > limits.maxBody {
            refusal = .error(413, "request body over \(limits.maxBody) bytes")
        }
        let exchange = Exchange(server: self, connection: connection, request: request)
        state.pointee = Unmanaged.passRetained(exchange).toOpaque()
        guard let refusal else { return .YES }
        exchange.phase = .answered
        return queue(refusal, on: connection)
    }

    /// After the handler, or on resuming: queues the answer if there is one, else suspends the connection until
    /// there is.
    private func answer(_ exchange: Exchange) -> MHD_Result {
        switch exchange.takeOutcome() {
        case .response(let response):
            exchange.phase = .answered
            return queue(response, on: exchange.connection)
        case .stream(let stream, let headers):
            exchange.phase = .answered
            exchange.stream = stream
            return queue(stream, headers: headers, on: exchange.connection)
        case nil:
            suspend(exchange)
            return .YES
        }
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let made = response.body.withUnsafeBytes {
            MHD_create_response_from_buffer($0.count, UnsafeMutableRawPointer(mutating: $0.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
        guard let made else { return .NO }
        for header in response.headers { _ = MHD_add_response_header(made, header.name, header.value) }
        let result = MHD_queue_response(connection, UInt32(clamping: response.status), made)
        MHD_destroy_response(made)
        return result
    }

    private func queue(_ stream: HTTPStream, headers: [HTTPField], on connection: OpaquePointer) -> MHD_Result {
        let context = Unmanaged.passRetained(stream).toOpaque()
        guard let made = MHD_create_response_from_callback(gb_mhd_size_unknown, 8 * 1024, readStream, context,
                                                           freeStream) else {
            Unmanaged<HTTPStream>.fromOpaque(context).release()
            return .NO
        }
        _ = MHD_add_response_header(made, "Content-Type", "text/event-stream")
        _ = MHD_add_response_header(made, "Cache-Control", "no-store")
        for header in headers { _ = MHD_add_response_header(made, header.name, header.value) }
        let result = MHD_queue_response(connection, 200, made)
        MHD_destroy_response(made)
        return result
    }

    fileprivate func read(_ stream: HTTPStream, into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let count = stream.read(into: buffer, capacity: capacity)
        if count == 0, let exchange = stream.exchange { suspend(exchange) }
        return count
    }

    private func suspend(_ exchange: Exchange) {
        guard !exchange.suspended, !exchange.finished else { return }
        exchange.suspended = true
        suspended[ObjectIdentifier(exchange)] = exchange
        MHD_suspend_connection(exchange.connection)
    }

    /// Host thread: the answer or stream bytes arrived; a no-op unless the connection is suspended.
    func resume(_ exchange: Exchange) {
        guard exchange.suspended, !exchange.finished, daemon != nil else { return }
        exchange.suspended = false
        suspended[ObjectIdentifier(exchange)] = nil
        MHD_resume_connection(exchange.connection)
        resumed = true
    }

    /// Host thread: a stream overflowed. A suspended connection is resumed (its reader then ends it with an error);
    /// one stuck writing to a client that does not read is shut down, which its next event reports to libmicrohttpd.
    func abort(_ exchange: Exchange) {
        guard !exchange.finished, daemon != nil else { return }
        if exchange.suspended {
            resume(exchange)
        } else {
            let fd = gb_mhd_connection_fd(exchange.connection)
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    fileprivate func completed(_ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let current = state.pointee else { return }
        state.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(current).takeRetainedValue()
        exchange.finished = true
        if exchange.suspended {
            exchange.suspended = false
            suspended[ObjectIdentifier(exchange)] = nil
        }
        exchange.stream?.end()
        exchange.stream = nil
    }

    private static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]

    private struct RawValue {
        var name: String
        var value: String?
        var raw: (UnsafePointer<CChar>?, UnsafePointer<CChar>?)
    }

    /// A connection's headers or query items, in order. `raw` keeps the C strings (valid during this callback) for
    /// the caller's own decoding.
    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind, raw: Bool = false) -> [RawValue] {
        var values: [RawValue] = []
        _ = withUnsafeMutablePointer(to: &values) { list in
            MHD_get_connection_values(connection, kind, { context, _, key, value in
                let list = context!.assumingMemoryBound(to: [RawValue].self)
                list.pointee.append(RawValue(name: key.map { String(cString: $0) } ?? "",
                                             value: value.map { String(cString: $0) }, raw: (key, value)))
                return .YES
            }, list)
        }
        return values
    }
}

private let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, size, state in
    let server = Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
    return server.access(connection!, url: url!, method: method!, upload: upload, uploadSize: size!, state: state!)
}

private let requestCompleted: MHD_RequestCompletedCallback = { context, _, state, _ in
    guard let state else { return }
    Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().completed(state)
}

private let readStream: MHD_ContentReaderCallback = { context, _, buffer, capacity in
    let stream = Unmanaged<HTTPStream>.fromOpaque(context!).takeUnretainedValue()
    guard let server = stream.exchange?.server else { return gb_mhd_end_with_error }
    return server.read(stream, into: UnsafeMutableRawPointer(buffer!), capacity: capacity)
}

private let freeStream: MHD_ContentReaderFreeCallback = { context in
    Unmanaged<HTTPStream>.fromOpaque(context!).release()
}
