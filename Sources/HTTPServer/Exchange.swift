import CMicroHTTPD
import Glibc
import Synchronization

/// One request on one connection, from its headers to libmicrohttpd's "completed": what was read, whether the
/// connection is suspended, and the answer once there is one. Held by libmicrohttpd (its per-request pointer, one
/// retain, released when completed) and by the responder and stream. Everything but `outcome` is host-thread only,
/// which is what makes the `@unchecked Sendable` sound; `connection` is used only while `finished` is false.
final class Exchange: @unchecked Sendable {
    enum Outcome {
        case response(HTTPResponse)
        case stream(HTTPStream, [HTTPField])
    }

    enum Phase {
        /// Headers seen, the body being read.
        case reading
        /// Given to the handler; waiting for its answer (suspended if it did not answer at once).
        case waiting
        /// A response is queued.
        case answered
    }

    /// Live exchanges in this process: the tests' proof that a finished or abandoned request keeps nothing.
    static let live = Atomic<Int>(0)

    let server: HTTPServer
    let connection: OpaquePointer
    /// The answer until the host takes it, and whether there was one (a second is ignored).
    private let outcome = Mutex<(answer: Outcome?, settled: Bool)>((nil, false))

    @exclusivity(unchecked) private var _phase = Phase.reading
    @exclusivity(unchecked) private var _suspended = false
    @exclusivity(unchecked) private var _finished = false
    @exclusivity(unchecked) private var _request: HTTPRequest
    /// Body bytes over `maxBody`, read and dropped: the 413 goes out once the upload ends.
    @exclusivity(unchecked) private var _discarded = 0
    @exclusivity(unchecked) private var _stream: HTTPStream?

    var phase: Phase {
        get { server.assertOnHost("Exchange.phase"); return _phase }
        set { server.assertOnHost("Exchange.phase"); _phase = newValue }
    }
    var suspended: Bool {
        get { server.assertOnHost("Exchange.suspended"); return _suspended }
        set { server.assertOnHost("Exchange.suspended"); _suspended = newValue }
    }
    var finished: Bool {
        get { server.assertOnHost("Exchange.finished"); return _finished }
        set { server.assertOnHost("Exchange.finished"); _finished = newValue }
    }
    var request: HTTPRequest {
        _read { server.assertOnHost("Exchange.request"); yield _request }
        _modify { server.assertOnHost("Exchange.request"); yield &_request }
    }
    var discarded: Int {
        get { server.assertOnHost("Exchange.discarded"); return _discarded }
        set { server.assertOnHost("Exchange.discarded"); _discarded = newValue }
    }
    var stream: HTTPStream? {
        get { server.assertOnHost("Exchange.stream"); return _stream }
        set { server.assertOnHost("Exchange.stream"); _stream = newValue }
    }

    init(server: HTTPServer, connection: OpaquePointer, request: HTTPRequest) {
        self.server = server
        self.connection = connection
        _request = request
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        Self.live.subtract(1, ordering: .relaxed)
    }

    /// Body bytes as they arrive; past `maxBody` they are counted, not kept.
    func take(_ bytes: UnsafeRawBufferPointer, maxBody: Int) {
        if discarded == 0 && request.body.count + bytes.count <= maxBody {
            request.body.append(contentsOf: bytes)
        } else {
            discarded += bytes.count
            if !request.body.isEmpty { request.body = [] }
        }
    }

    /// From any thread, once: the answer. Wakes the connection on the host's thread (if the handler is still running
    /// there, the answer is taken when it returns and the wake finds nothing suspended). False if answered already.
    @discardableResult
    func settle(_ answer: Outcome) -> Bool {
        let first = outcome.withLock { current -> Bool in
            guard !current.settled else { return false }
            current = (answer, true)
            return true
        }
        if first { resumeSoon() }
        return first
    }

    /// Host thread: the answer, once, for queueing.
    func takeOutcome() -> Outcome? {
        outcome.withLock { current in
            defer { current.answer = nil }
            return current.answer
        }
    }

    /// On the host's thread at once (libmicrohttpd allows a resume from inside its callbacks), else soon.
    func resumeSoon() {
        if server.host.isHostThread {
            server.resume(self)
        } else {
            server.host.execute { [self] in server.resume(self) }
        }
    }

    func abortSoon() {
        if server.host.isHostThread {
            server.abort(self)
        } else {
            server.host.execute { [self] in server.abort(self) }
        }
    }
}
