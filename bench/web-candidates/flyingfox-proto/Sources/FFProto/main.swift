// GET / (the embedded page), GET /events (SSE, one small JSON event a second per client), POST /api/echo (<= 64 KiB,
// else 413). Port 8782 or $PORT. FlyingFox's API speaks Foundation's Data (its bodies, its requests).
import FlyingFox
import FlyingSocks
import Foundation

let port = UInt16(ProcessInfo.processInfo.environment["PORT"] ?? "8782") ?? 8782
// EVENT_PAD=N pads each event with N bytes (the stalled-client measurement, to fill socket buffers in seconds).
let pad = String(repeating: "x", count: Int(ProcessInfo.processInfo.environment["EVENT_PAD"] ?? "0") ?? 0)
let page = pageHTML.withUTF8Buffer { Data($0) }
let maxBody = 64 * 1024

/// The SSE stream of one client: a chunk a second. FlyingFox asks for the next chunk only once the last one is
/// written (its socket writes suspend while the client does not read), so a stalled client holds one chunk.
struct Ticks: AsyncBufferedSequence, AsyncBufferedIteratorProtocol {
    typealias Element = UInt8
    var n = 0
    var pending: [UInt8] = []
    func makeAsyncIterator() -> Ticks { self }
    mutating func nextBuffer(suggested count: Int) async throws -> [UInt8]? {
        if pending.isEmpty {
            try await Task.sleep(for: .seconds(1))
            n += 1
            pending = Array("data: {\"n\":\(n),\"rssi\":-60,\"pad\":\"\(pad)\"}\n\n".utf8)
        }
        let chunk = Array(pending.prefix(count))
        pending.removeFirst(chunk.count)
        return chunk
    }
    mutating func next() async throws -> UInt8? {
        guard let b = try await nextBuffer(suggested: 1) else { return nil }
        return b.first
    }
}

let server = HTTPServer(address: try .inet(ip4: "127.0.0.1", port: port), timeout: 15)
await server.appendRoute("GET /") { _ in
    HTTPResponse(statusCode: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: page)
}
await server.appendRoute("GET /events") { _ in
    HTTPResponse(
        statusCode: .ok,
        headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
        body: HTTPBodySequence(from: Ticks())  // chunked transfer encoding, no end
    )
}
await server.appendRoute("POST /api/echo") { request in
    if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maxBody {
        return HTTPResponse(statusCode: .payloadTooLarge)
    }
    var body = Data()
    for try await chunk in request.bodySequence {
        body.append(chunk)
        if body.count > maxBody { return HTTPResponse(statusCode: .payloadTooLarge) }
    }
    return HTTPResponse(statusCode: .ok, headers: [.contentType: "application/json"], body: body)
}
try await server.run()
