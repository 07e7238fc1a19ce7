import Glibc
import HTTPServer
import LoopHosting
import Synchronization
import Testing

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Waits for `condition` to hold, checking every 5 ms, until `timeout`; the condition is the synchronisation, the
/// pause between checks only keeps the wait cheap.
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// A plain OS thread (another thread than the host's and the test's).
func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { argument in
        Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    precondition(rc == 0)
    pthread_detach(thread)
}

/// A blocking TCP client on 127.0.0.1, reading with deadlines.
final class TestClient {
    let fd: Int32

    init(port: UInt16, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw TestFailure("connect failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Everything until the server closes the connection.
    func readToEnd(timeout: Duration = .seconds(10)) throws -> [UInt8] {
        var received: [UInt8] = []
        while try readSome(into: &received, until: ContinuousClock.now + timeout) {}
        return received
    }

    /// Reads until `received` contains `text`; the text read so far.
    func read(until text: String, timeout: Duration = .seconds(10)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        while !String(decoding: received, as: UTF8.self).contains(text) {
            guard try readSome(into: &received, until: deadline) else {
                throw TestFailure("closed before \"\(text)\": \(String(decoding: received, as: UTF8.self))")
            }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until `enough` holds for what arrived (a body in chunks whose boundaries fall anywhere).
    func read(timeout: Duration = .seconds(10), until enough: (String) -> Bool) throws -> String {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        while !enough(String(decoding: received, as: UTF8.self)) {
            guard try readSome(into: &received, until: deadline) else {
                throw TestFailure("closed before enough arrived: \(received.count) bytes")
            }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Whether the server closed the connection (reads and drops what is left), by `timeout`.
    func closedByServer(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var sink: [UInt8] = []
        do {
            while try readSome(into: &sink, until: deadline) { sink.removeAll(keepingCapacity: true) }
            return true
        } catch {
            return error is ResetError
        }
    }

    struct ResetError: Error {}

    /// False at end of stream; throws at the deadline.
    private func readSome(into received: inout [UInt8], until deadline: ContinuousClock.Instant) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let left = deadline - ContinuousClock.now
        let ms = max(0, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
        guard poll(&descriptor, 1, ms) > 0 else { throw TestFailure("timed out reading") }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buffer, buffer.count, 0)
        if n < 0 {
            if errno == ECONNRESET { throw ResetError() }
            throw TestFailure("recv failed: errno \(errno)")
        }
        received += buffer[..<n]
        return n > 0
    }
}

/// A response as the client read it.
struct ParsedResponse {
    var status: Int
    var head: String
    var body: String

    init(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.firstRange(of: "\r\n\r\n") else { throw TestFailure("no header end in: \(text)") }
        head = String(text[..<split.lowerBound])
        body = String(text[split.upperBound...])
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let code = Int(parts[1]) else { throw TestFailure("bad status line: \(statusLine)") }
        status = code
    }
}

/// One request with `Connection: close`, its response read to the end.
func fetch(_ port: UInt16, _ request: String, body: [UInt8] = []) throws -> ParsedResponse {
    let client = try TestClient(port: port)
    try client.send(Array(request.utf8) + body)
    return try ParsedResponse(client.readToEnd())
}

func get(_ port: UInt16, _ target: String) throws -> ParsedResponse {
    try fetch(port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
}

/// A server on an `ThreadLoopHost`, on 127.0.0.1 and a free port, for the length of `body`.
func withServer(limits: HTTPServerLimits = HTTPServerLimits(),
                _ handle: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void,
                _ body: (HTTPServer) throws -> Void) throws {
    let host = ThreadLoopHost()
    defer { host.shutdown() }
    let server = HTTPServer(listen: "127.0.0.1:0", limits: limits, handler: HTTPHandlerFunction(handle), host: host)
    try server.start()
    defer { server.stop() }
    try body(server)
}

/// A value set on one thread and read on another.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var get: Value { value.withLock { $0 } }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func update(_ body: (inout Value) -> Void) { value.withLock { body(&$0) } }
}
