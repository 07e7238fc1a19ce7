import Codecs
/// A name and a value: a request's header (name in lowercase) or query item, a response's header.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request read in full (headers and body) before the handler sees it, so that a handler never waits on a socket.
public struct HTTPRequest: Sendable {
    /// As sent, in upper case for the standard methods (only those reach a handler).
    public var method: String
    /// Percent-decoded, without the query; always starts with "/" and holds no "." or ".." segment, no NUL and only
    /// valid UTF-8 (anything else was refused with 400 before the handler).
    public var path: String
    /// The query's items in order, decoded ("+" is a space); an item without "=" has an empty value.
    public var query: [HTTPField]
    /// Names in lower case, in the order sent.
    public var headers: [HTTPField]
    public var body: [UInt8]
    /// The peer's IP address as text ("127.0.0.1", "::1"; an IPv4 client of a dual-stack listener as IPv4), without
    /// the port: what a per-client limit (login attempts) keys on.
    public var peer: String

    public init(method: String, path: String, query: [HTTPField] = [], headers: [HTTPField] = [], body: [UInt8] = [],
                peer: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    /// The first header of that name (any case).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }

    /// The first query item of that name.
    public func queryItem(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// A complete answer. The body is copied once into libmicrohttpd's response, so the value can be dropped at once.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [HTTPField]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPField] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `text` is already JSON; it goes out as it is.
    public static func json(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [HTTPField("Content-Type", "application/json")], body: Array(text.utf8))
    }

    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse {
        HTTPResponse(status: status, headers: [HTTPField("Content-Type", contentType)], body: Array(text.utf8))
    }

    /// `{"error":"message"}`, the page's shape for every refusal.
    public static func error(_ status: Int, _ message: String) -> HTTPResponse {
        json(JSONValue.object([("error", .string(message))]).serialized, status: status)
    }
}

/// What a running server allows itself; the defaults are the page's (docs/dev/web-server.md): the worst case of
/// memory is a product of these numbers, whatever the clients do.
public struct HTTPServerLimits: Sendable {
    /// Connections at once; libmicrohttpd refuses more at accept.
    public var connections: Int = 16
    /// libmicrohttpd's pool per connection: request line, headers and its read and write buffers live in it, so a
    /// request whose headers do not fit is refused.
    public var connectionMemory: Int = 32 * 1024
    /// A connection that makes no progress this long is closed: a stalled client's too. A stream waiting for news
    /// is suspended, which does not count, and one that keeps sending makes progress.
    public var connectionTimeout: Duration = .seconds(60)
    /// The largest request body accepted; larger ones are answered 413 without being kept.
    public var maxBody: Int = 64 * 1024
    /// Bytes a stream may hold that its client has not taken yet; past this the stream is closed (the browser's
    /// `EventSource` reconnects), so a stalled follower costs at most this much.
    public var streamQueue: Int = 64 * 1024

    public init() {}
}

public enum HTTPServerError: Error, Equatable, Sendable {
    /// Not host:port, the host not an IP address or "localhost", or the port not a number up to 65535.
    case badListenAddress(String)
    /// Another process (or another server here) listens on that address and port.
    case addressInUse(String)
    /// socket, bind or listen failed otherwise (an address not on this machine: `EADDRNOTAVAIL`; a port below 1024
    /// without the capability: `EACCES`).
    case cannotListen(String, errno: Int32)
    /// libmicrohttpd refused to start (out of memory or descriptors).
    case cannotStart(String)
    case alreadyStarted
}

/// Percent-decoding of what libmicrohttpd hands over undecoded (the shim keeps the escapes).
enum PercentDecoding {
    /// nil for a malformed escape, a NUL (escaped or not) or bytes that are not UTF-8.
    static func decode(_ raw: UnsafePointer<CChar>) -> String? {
        var bytes: [UInt8] = []
        var pointer = UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self)
        while pointer.pointee != 0 {
            var byte = pointer.pointee
            if byte == UInt8(ascii: "%") {
                guard let high = hexValue(pointer[1]), let low = hexValue(pointer[2]) else { return nil }
                byte = high << 4 | low
                pointer += 2
            }
            guard byte != 0 else { return nil }
            bytes.append(byte)
            pointer += 1
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// A path the handler may trust: decoded, absolute, no "." or ".." segment (an escaped "/" counts as one, since
    /// it is decoded first).
    static func path(_ raw: UnsafePointer<CChar>) -> String? {
        guard let path = decode(raw), path.utf8.first == UInt8(ascii: "/") else { return nil }
        for segment in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        where segment.elementsEqual("..".utf8) || segment.elementsEqual(".".utf8) {
            return nil
        }
        return path
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
