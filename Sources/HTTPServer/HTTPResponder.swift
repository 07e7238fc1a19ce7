import Synchronization

/// Answers the server's requests. Called on the host's thread, once per request whose body was read in full; it
/// must not block (it runs inside the host's loop turn): answer now, or keep the responder and answer later from
/// any thread.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder)
}

/// A handler made of a closure.
public struct HTTPHandlerFunction: HTTPHandler {
    private let body: @Sendable (HTTPRequest, HTTPResponder) -> Void

    public init(_ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) {
        self.body = body
    }

    public func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        body(request, responder)
    }
}

/// The one answer to one request: `respond` or `stream`, once, from any thread, now or later. Until then the
/// connection is suspended (it costs no turn and does not time out). A responder dropped unanswered answers 500, so
/// a forgotten request cannot hold its connection for good.
public final class HTTPResponder: Sendable {
    let exchange: Exchange

    init(exchange: Exchange) {
        self.exchange = exchange
    }

    deinit {
        exchange.settle(.response(.error(500, "no answer")))
    }

    /// The first answer wins; later ones are ignored.
    public func respond(_ response: HTTPResponse) {
        exchange.settle(.response(response))
    }

    /// Turns the answer into a `text/event-stream` (status 200, `Cache-Control: no-store`, chunked, `headers` added).
    /// If the request was answered already, the stream returned is closed.
    public func stream(headers: [HTTPField] = []) -> HTTPStream {
        let stream = HTTPStream(exchange: exchange, limit: exchange.server.limits.streamQueue)
        if !exchange.settle(.stream(stream, headers)) { stream.close() }
        return stream
    }
}

/// A response whose body is written as it comes: Server-Sent Events for the page. `send` and `close` are for any
/// thread. What the client has not taken is queued up to the server's `streamQueue` bytes; past that the stream is
/// closed and its queue freed (a stalled browser costs no more; `EventSource` reconnects once it reads again).
public final class HTTPStream: Sendable {
    struct State {
        var queue: [UInt8] = []
        /// Bytes of `queue` already given to libmicrohttpd.
        var head = 0
        /// No more `send`: after `close()`, an overflow, or the connection's end.
        var closed = false
        var overflowed = false
        /// The connection is over; `onClose` handlers have run.
        var ended = false
        /// The connection was suspended for want of bytes, and no resume is on its way yet.
        var parked = false
        var onClose: [@Sendable () -> Void] = []
        /// Until the connection ends: whoever keeps the stream after that keeps nothing of the request.
        var exchange: Exchange?
    }

    enum SendOutcome { case refused, queued, resume, overflow }

    let limit: Int
    let state: Mutex<State>

    init(exchange: Exchange, limit: Int) {
        self.limit = limit
        state = Mutex(State(exchange: exchange))
    }

    var exchange: Exchange? { state.withLock { $0.exchange } }

    /// Queues `bytes` for the client; false if the stream is closed, or was just closed because the client fell
    /// `streamQueue` bytes behind. A client that has taken everything is never behind, so one event larger than the
    /// bound (a large bridge's whole state) still goes out: a stream holds at most the bound or one event.
    @discardableResult
    public func send(_ bytes: some Collection<UInt8>) -> Bool {
        let next = state.withLock { state -> SendOutcome in
            guard !state.closed else { return .refused }
            let pending = state.queue.count - state.head
            guard pending == 0 || pending + bytes.count <= limit else {
                state.closed = true
                state.overflowed = true
                state.queue = []
                state.head = 0
                state.parked = false
                return .overflow
            }
            state.queue.append(contentsOf: bytes)
            guard state.parked else { return .queued }
            state.parked = false
            return .resume
        }
        switch next {
        case .refused: return false
        case .queued: return true
        case .resume:
            exchange?.resumeSoon()
            return true
        case .overflow:
            exchange?.abortSoon()
            return false
        }
    }

    /// One Server-Sent Event: an optional `event:` line, then `data:` lines (one per line of `data`), then a blank
    /// line.
    @discardableResult
    public func send(event: String? = nil, data: String) -> Bool {
        var text = ""
        if let event { text += "event: \(event)\n" }
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        text += "\n"
        return send(text.utf8)
    }

    /// Ends the stream once what was queued is written. Idempotent.
    public func close() {
        let resume = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            defer { state.parked = false }
            return state.parked
        }
        if resume { exchange?.resumeSoon() }
    }

    /// Calls `body` once when the connection is over: the client went away, the stream ended or overflowed, or the
    /// server stopped. Runs on the host's thread, or at once if it is over already.
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.ended { return true }
            state.onClose.append(body)
            return false
        }
        if now { body() }
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Bytes queued that the client has not taken.
    public var queuedBytes: Int { state.withLock { $0.queue.count - $0.head } }

    /// Host thread, in libmicrohttpd's content reader: up to `capacity` bytes into `buffer`; 0 when there is nothing
    /// (the caller suspends the connection), −1 at the end, −2 after an overflow (libmicrohttpd closes the
    /// connection).
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        state.withLock { state in
            let available = state.queue.count - state.head
            if available > 0 {
                let count = min(available, capacity)
                state.queue.withUnsafeBytes { bytes in
                    buffer.copyMemory(from: bytes.baseAddress! + state.head, byteCount: count)
                }
                state.head += count
                if state.head == state.queue.count {
                    state.queue.removeAll(keepingCapacity: state.queue.capacity <= 4096)
                    state.head = 0
                } else if state.head >= 4096 && state.head * 2 >= state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return count
            }
            if state.closed { return state.overflowed ? -2 : -1 }
            state.parked = true
            return 0
        }
    }

    /// Host thread, when the connection is over: frees the queue and tells whoever asked.
    func end() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.ended else { return [] }
            state.ended = true
            state.closed = true
            state.parked = false
            state.queue = []
            state.head = 0
            state.exchange = nil
            defer { state.onClose = [] }
            return state.onClose
        }
        for handler in handlers { handler() }
    }
}
