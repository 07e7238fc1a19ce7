// GET / (the embedded page), GET /events (SSE, one small JSON event a second per client), POST /api/echo (<= 64 KiB,
// else 413), and GET /ws (a WebSocket echo, to carry hummingbird-websocket's cost). Port 8781 or $PORT.
import Hummingbird
import HummingbirdWebSocket
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

let port = Int(String(cString: getenv("PORT") ?? strdup("8781"))) ?? 8781
// EVENT_PAD=N pads each event with N bytes (the stalled-client measurement, to fill socket buffers in seconds).
let pad = String(repeating: "x", count: Int(String(cString: getenv("EVENT_PAD") ?? strdup("0"))) ?? 0)
let page = pageHTML.withUTF8Buffer { ByteBuffer(bytes: $0) }

let router = Router()
router.get("/") { _, _ in
    Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: page))
}
router.get("/events") { _, _ in
    Response(
        status: .ok,
        headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
        body: ResponseBody { writer in
            var n = 0
            while true {
                try await Task.sleep(for: .seconds(1))
                n += 1
                // Suspends while the client does not read (NIO's writer applies back pressure).
                try await writer.write(ByteBuffer(string: "data: {\"n\":\(n),\"rssi\":-60,\"pad\":\"\(pad)\"}\n\n"))
            }
        }
    )
}
router.post("/api/echo") { request, _ in
    let body = try await request.body.collect(upTo: 64 * 1024)  // throws HTTPError(.contentTooLarge): 413
    return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
}

let wsRouter = Router(context: BasicWebSocketRequestContext.self)
wsRouter.ws("/ws") { inbound, outbound, _ in
    for try await frame in inbound where frame.opcode == .text {
        try await outbound.write(.custom(.init(fin: true, opcode: .text, data: frame.data)))
    }
}

let app = Application(
    router: router,
    server: .http1WebSocketUpgrade(webSocketRouter: wsRouter),
    configuration: .init(address: .hostname("127.0.0.1", port: port))
)
try await app.runService()
