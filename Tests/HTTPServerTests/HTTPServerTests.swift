import DBus
import Glibc
import Synchronization
import Testing
@testable import HTTPServer
import LoopHosting

/// The D-Bus event loop as the server's host, as the daemon wires it (Sources/Bridge/Services/EventLoopHost.swift).
private struct EventLoopTestHost: LoopHost {
    let loop: EventLoop

    func attach(interest: @escaping @Sendable () -> LoopInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        loop.addSource(interest: {
            let wanted = interest()
            return PollInterest(fd: wanted.fd, events: wanted.events, deadline: wanted.deadline)
        }, serve: serve)
    }

    func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }

    var isHostThread: Bool { loop.isLoopThread }
}

/// A host that is never polled: the test itself plays its thread, to read the server's interest.
private final class InertHost: LoopHost, @unchecked Sendable {
    var interest: (@Sendable () -> LoopInterest)?
    func attach(interest: @escaping @Sendable () -> LoopInterest, serve: @escaping @Sendable (Int16) -> Bool) {
        self.interest = interest
    }
    func execute(_ work: @escaping @Sendable () -> Void) { work() }
    var isHostThread: Bool { true }
}

/// Real sockets on 127.0.0.1 against libmicrohttpd. Serialized: the live-request count is process-wide.
@Suite(.serialized) struct HTTPServerTests {
    @Test func getIsAnsweredWithTheRequestDecoded() throws {
        let seen = Shared<HTTPRequest?>(nil)
        try withServer({ request, responder in
            seen.set(request)
            responder.respond(.text("hello"))
        }) { server throws in
            let response = try fetch(server.port, "GET /a%20b/c?x=1&y=two+words&z&n=%C3%A9 HTTP/1.1\r\nHost: h\r\n"
                                     + "X-Custom-Thing: Yes\r\nConnection: close\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.body == "hello")
            #expect(response.head.lowercased().contains("content-type: text/plain; charset=utf-8"))
            let request = try #require(seen.get)
            #expect(request.method == "GET")
            #expect(request.path == "/a b/c")
            #expect(request.query == [HTTPField("x", "1"), HTTPField("y", "two words"), HTTPField("z", ""),
                                      HTTPField("n", "é")])
            #expect(request.header("X-Custom-Thing") == "Yes")
            #expect(request.headers.contains(HTTPField("x-custom-thing", "Yes")))
            #expect(request.peer == "127.0.0.1")
            #expect(request.body.isEmpty)
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aHandlersNotFoundAndJSONReachTheClient() throws {
        try withServer({ request, responder in
            if request.path == "/api/x" {
                responder.respond(.json("{\"ok\":true}"))
            } else {
                responder.respond(.error(404, "no \"such\" page"))
            }
        }) { server throws in
            let missing = try get(server.port, "/nothing")
            #expect(missing.status == 404)
            #expect(missing.body == #"{"error":"no \"such\" page"}"#)
            #expect(missing.head.lowercased().contains("content-type: application/json"))
            let found = try get(server.port, "/api/x")
            #expect(found.status == 200)
            #expect(found.body == #"{"ok":true}"#)
        }
    }

    @Test func anAnswerCanComeLaterFromAnotherThread() throws {
        let waiting = Shared<HTTPResponder?>(nil)
        try withServer({ _, responder in waiting.set(responder) }) { server throws in
            let client = try TestClient(port: server.port)
            try client.send("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
            #expect(eventually { waiting.get != nil })
            // Meanwhile the server answers others.
            let responder = try #require(waiting.get)
            waiting.set(nil)
            onAnotherThread { responder.respond(.text("later", status: 202)) }
            let response = try ParsedResponse(client.readToEnd())
            #expect(response.status == 202)
            #expect(response.body == "later")
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aResponderDroppedUnansweredAnswers500() throws {
        try withServer({ _, _ in }) { server throws in
            let response = try get(server.port, "/")
            #expect(response.status == 500)
        }
    }

    @Test func aBodyOfExactlyTheLimitIsAcceptedAndOneByteMoreRefused() throws {
        let limit = HTTPServerLimits().maxBody
        #expect(limit == 64 * 1024)
        try withServer({ request, responder in
            responder.respond(.text("\(request.body.count) \(request.body.last ?? 0)"))
        }) { server throws in
            let exact = [UInt8](repeating: 7, count: limit)
            let accepted = try fetch(server.port, "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: \(limit)\r\n"
                                     + "Connection: close\r\n\r\n", body: exact)
            #expect(accepted.status == 200)
            #expect(accepted.body == "\(limit) 7")

            // Refused on the headers alone: the body is never sent, let alone kept.
            let client = try TestClient(port: server.port)
            try client.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: \(limit + 1)\r\nConnection: close\r\n\r\n")
            let refused = try ParsedResponse(client.readToEnd())
            #expect(refused.status == 413)
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aChunkedBodyIsLimitedToo() throws {
        let limit = HTTPServerLimits().maxBody
        let handled = Shared(0)
        try withServer({ request, responder in
            handled.update { $0 += 1 }
            responder.respond(.text("\(request.body.count)"))
        }) { server throws in
            func chunked(_ size: Int) -> [UInt8] {
                var bytes: [UInt8] = []
                var left = size
                while left > 0 {
                    let chunk = min(left, 5000)
                    bytes += Array((String(chunk, radix: 16) + "\r\n").utf8) + [UInt8](repeating: 65, count: chunk)
                        + Array("\r\n".utf8)
                    left -= chunk
                }
                return bytes + Array("0\r\n\r\n".utf8)
            }
            let head = "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            let accepted = try fetch(server.port, head, body: chunked(limit))
            #expect(accepted.status == 200)
            #expect(accepted.body == "\(limit)")
            let refused = try fetch(server.port, head, body: chunked(limit + 1))
            #expect(refused.status == 413)
            #expect(handled.get == 1)
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func pathsThatClimbOrHideBytesAreRefused() throws {
        let handled = Shared<[String]>([])
        try withServer({ request, responder in
            handled.update { $0.append(request.path) }
            responder.respond(.text("ok"))
        }) { server throws in
            for target in ["/a/../b", "/..", "/%2e%2e/etc/passwd", "/a/%2E%2E/b", "/a%2F..%2Fb", "/./a", "/a%00b",
                           "/a%zz", "/%ff", "/a?q=%00"] {
                #expect(try get(server.port, target).status == 400, "\(target)")
            }
            #expect(try get(server.port, "/a..b/.hidden/x").status == 200)
            #expect(try fetch(server.port, "FOO / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").status == 405)
            // Refused by libmicrohttpd's parser before any handler.
            #expect(try fetch(server.port, "GET / HTTP/1.1\r\nNo colon here\r\n\r\n").status == 400)
            #expect(try fetch(server.port, "GET /x\r\n\r\n").status == 400)
        }
        #expect(handled.get == ["/a..b/.hidden/x"])
    }

    @Test func aStreamCarriesEventsSentFromAnotherThread() throws {
        let streams = Shared<[HTTPStream]>([])
        try withServer({ _, responder in
            let stream = responder.stream()
            stream.send(event: "state", data: "{\"n\":0}")
            streams.update { $0.append(stream) }
        }) { server throws in
            let client = try TestClient(port: server.port)
            try client.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
            let first = try client.read(until: "data: {\"n\":0}\n\n")
            #expect(first.lowercased().contains("content-type: text/event-stream"))
            #expect(first.lowercased().contains("cache-control: no-store"))
            let stream = try #require(streams.get.first)
            let closed = Shared(false)
            stream.onClose { closed.set(true) }
            onAnotherThread {
                stream.send(event: "log", data: "one\ntwo")
            }
            _ = try client.read(until: "event: log\ndata: one\ndata: two\n\n")
            // A quiet stream is suspended; the next event still arrives.
            onAnotherThread { stream.send(Array("data: three\n\n".utf8)) }
            _ = try client.read(until: "data: three\n\n")
            stream.close()
            _ = try client.read(until: "0\r\n\r\n")     // the chunked body's end
            #expect(eventually { closed.get })
            #expect(!stream.send(Array("x".utf8)))
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    /// The bound is on how far a client is behind, not on an event's size: a state larger than the queue reaches a
    /// client that reads.
    @Test func anEventLargerThanTheQueueReachesAReadingClient() throws {
        let big = String(repeating: "z", count: 3 * HTTPServerLimits().streamQueue)
        try withServer({ _, responder in
            let stream = responder.stream()
            onAnotherThread { stream.send(event: "state", data: big) }
        }) { server throws in
            let client = try TestClient(port: server.port)
            try client.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
            // Counted, not matched: the chunked body's boundaries fall inside the event.
            let text = try client.read { $0.utf8.count(where: { $0 == UInt8(ascii: "z") }) >= big.utf8.count }
            #expect(text.contains("event: state\ndata: zzz"))
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aClientThatGoesAwayIsNoticed() throws {
        let closed = Shared(false)
        try withServer({ _, responder in
            responder.stream().onClose { closed.set(true) }
        }) { server throws in
            do {
                let client = try TestClient(port: server.port)
                try client.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try client.read(until: "\r\n\r\n")
            }
            // Suspended with nothing to send, the connection's end is seen at the next attempt to write.
            #expect(!closed.get)
        }
        #expect(closed.get)
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aStalledFollowerIsClosedWhenItsQueueOverflows() throws {
        let streams = Shared<[HTTPStream]>([])
        let closed = Shared(false)
        try withServer({ request, responder in
            if request.path == "/api/events" {
                let stream = responder.stream()
                stream.onClose { closed.set(true) }
                streams.update { $0.append(stream) }
            } else {
                responder.respond(.text("still here"))
            }
        }) { server throws in
            let stalled = try TestClient(port: server.port, receiveBuffer: 4096)
            try stalled.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(eventually { !streams.get.isEmpty })
            let stream = try #require(streams.get.first)
            let event = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
            // First the kernel's buffers fill: the server keeps taking events until the socket takes no more, and
            // then the connection waits to write (not suspended), the case a shutdown must end.
            var sent = 0
            while sent < 64 * 1024 * 1024 && drained(stream) {
                stream.send(event)
                sent += event.count
            }
            #expect(sent < 64 * 1024 * 1024, "the socket never filled")
            #expect(!closed.get)
            // Then the queue: its bound ends the stream, and what it held is let go at once.
            while sent < 128 * 1024 * 1024 && stream.send(event) { sent += event.count }
            #expect(stream.isClosed)
            #expect(stream.queuedBytes == 0)
            #expect(eventually { closed.get })
            #expect(stalled.closedByServer())
            #expect(try get(server.port, "/").body == "still here")
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    /// Whether the server took everything queued into the socket within a while.
    private func drained(_ stream: HTTPStream) -> Bool {
        eventually(timeout: .milliseconds(300)) { stream.queuedBytes == 0 }
    }

    @Test func aFollowerTooSlowForItsEventsIsClosed() throws {
        // Events sent faster than the loop drains them, while the connection is suspended or writing.
        let closed = Shared(false)
        let overflowed = Shared(false)
        try withServer({ _, responder in
            let stream = responder.stream()
            stream.onClose { closed.set(true) }
            onAnotherThread {
                let event = [UInt8](repeating: UInt8(ascii: "y"), count: 4096)
                for _ in 0..<100_000 where !stream.send(event) {
                    overflowed.set(true)
                    return
                }
            }
        }) { server throws in
            let client = try TestClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(eventually { overflowed.get && closed.get })
            #expect(client.closedByServer())
        }
        #expect(eventually { HTTPServer.liveRequests == 0 })
    }

    @Test func aQuietStreamOutlivesTheTimeoutAnIdleConnectionDoesNot() throws {
        var limits = HTTPServerLimits()
        limits.connectionTimeout = .seconds(1)
        let streams = Shared<[HTTPStream]>([])
        try withServer(limits: limits, { request, responder in
            if request.path == "/api/events" {
                streams.update { $0.append(responder.stream()) }
            } else {
                responder.respond(.text("ok"))
            }
        }) { server throws in
            let follower = try TestClient(port: server.port)
            try follower.send("GET /api/events HTTP/1.1\r\nHost: h\r\n\r\n")
            _ = try follower.read(until: "\r\n\r\n")
            let idle = try TestClient(port: server.port)
            try idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            _ = try idle.read(until: "ok")
            let opened = ContinuousClock.now
            #expect(idle.closedByServer(timeout: .seconds(5)))
            #expect(ContinuousClock.now - opened >= .milliseconds(900))
            // The follower heard nothing for longer than the timeout: suspended, it does not count as stalled.
            #expect(eventually { ContinuousClock.now - opened > .milliseconds(2500) })
            let stream = try #require(streams.get.first)
            stream.send(event: "state", data: "late")
            _ = try follower.read(until: "data: late\n\n")
        }
    }

    @Test func anAddressInUseIsItsOwnError() throws {
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(holder, $0, length) == 0 && listen(holder, 1) == 0 && getsockname(holder, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let host = ThreadLoopHost()
        defer { host.shutdown() }
        let server = HTTPServer(listen: "127.0.0.1:\(port)", handler: HTTPHandlerFunction { _, _ in }, host: host)
        #expect(throws: HTTPServerError.addressInUse("127.0.0.1:\(port)")) { try server.start() }
        server.stop()
    }

    @Test(arguments: ["nonsense", "8780", "1.2.3:80", "[::1]8780", "::1:8780", "127.0.0.1:", "127.0.0.1:65536",
                      "127.0.0.1:-1", "example.org:80", "[zz]:80"])
    func aBadListenAddressIsItsOwnError(_ listen: String) throws {
        let host = ThreadLoopHost()
        defer { host.shutdown() }
        let server = HTTPServer(listen: listen, handler: HTTPHandlerFunction { _, _ in }, host: host)
        #expect(throws: HTTPServerError.badListenAddress(listen)) { try server.start() }
    }

    @Test func theListenAddressesThePageOffers() throws {
        for listen in ["127.0.0.1:0", "localhost:0", "[::1]:0", "[::]:0", "0.0.0.0:0"] {
            let host = ThreadLoopHost()
            defer { host.shutdown() }
            let server = HTTPServer(listen: listen, handler: HTTPHandlerFunction { request, responder in
                responder.respond(.text(request.peer))
            }, host: host)
            try server.start()
            defer { server.stop() }
            if listen != "[::1]:0" {
                // IPv4 clients, also of the dual-stack "[::]", are seen as IPv4.
                #expect(try get(server.port, "/").body == "127.0.0.1", "\(listen)")
            }
        }
    }

    @Test func stopWithConnectionsOpenEndsThemAll() throws {
        let host = ThreadLoopHost()
        defer { host.shutdown() }
        let waiting = Shared<HTTPResponder?>(nil)
        let closed = Shared(false)
        let server = HTTPServer(listen: "127.0.0.1:0", handler: HTTPHandlerFunction { request, responder in
            switch request.path {
            case "/slow": waiting.set(responder)
            case "/events": responder.stream().onClose { closed.set(true) }
            default: responder.respond(.text("ok"))
            }
        }, host: host)
        try server.start()
        let slow = try TestClient(port: server.port)
        try slow.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
        let follower = try TestClient(port: server.port)
        try follower.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
        _ = try follower.read(until: "\r\n\r\n")
        let idle = try TestClient(port: server.port)
        try idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        _ = try idle.read(until: "ok")
        let silent = try TestClient(port: server.port)
        #expect(eventually { waiting.get != nil })

        server.stop()
        server.stop()
        #expect(closed.get)
        #expect(slow.closedByServer())
        #expect(follower.closedByServer())
        #expect(idle.closedByServer())
        #expect(silent.closedByServer())
        waiting.get?.respond(.text("too late"))
        waiting.set(nil)
        #expect(eventually { HTTPServer.liveRequests == 0 })
        #expect(throws: (any Error).self) { try TestClient(port: server.port) }
    }

    @Test func withNoClientTheServerAsksForNoWakeUp() throws {
        let host = InertHost()
        let server = HTTPServer(listen: "127.0.0.1:0", handler: HTTPHandlerFunction { _, _ in }, host: host)
        try server.start()
        let ask = try #require(host.interest)
        let interest = ask()
        #expect(interest.fd >= 0)
        #expect(interest.events == Int16(POLLIN))
        #expect(interest.deadline == .max)
        server.stop()
        #expect(ask().fd == -1)
    }

    @Test func theDBusLoopCanHostTheServer() throws {
        let loop = EventLoop()
        let server = HTTPServer(listen: "127.0.0.1:0", handler: HTTPHandlerFunction { request, responder in
            #expect(loop.isLoopThread)
            responder.respond(.text(request.path))
        }, host: EventLoopTestHost(loop: loop))
        try server.start()
        defer { server.stop() }
        #expect(try get(server.port, "/on/the/loop").body == "/on/the/loop")
    }

    @Test func onTheDBusLoopAnswersAndEventsComeLaterFromOtherThreads() throws {
        let loop = EventLoop()
        let waiting = Shared<HTTPResponder?>(nil)
        let streams = Shared<[HTTPStream]>([])
        let server = HTTPServer(listen: "127.0.0.1:0", handler: HTTPHandlerFunction { request, responder in
            if request.path == "/events" { streams.update { $0.append(responder.stream()) } } else { waiting.set(responder) }
        }, host: EventLoopTestHost(loop: loop))
        try server.start()
        defer { server.stop() }
        let slow = try TestClient(port: server.port)
        try slow.send("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        let follower = try TestClient(port: server.port)
        try follower.send("GET /events HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { waiting.get != nil && !streams.get.isEmpty })
        let responder = try #require(waiting.get)
        waiting.set(nil)
        let stream = try #require(streams.get.first)
        onAnotherThread { responder.respond(.text("later")) }
        #expect(try ParsedResponse(slow.readToEnd()).body == "later")
        for n in 0..<3 {
            onAnotherThread { stream.send(event: "state", data: "\(n)") }
            _ = try follower.read(until: "data: \(n)\n\n")
        }
        // From the loop thread itself, as the bridge's own changes would be sent.
        loop.execute { stream.send(event: "state", data: "from the loop") }
        _ = try follower.read(until: "data: from the loop\n\n")
    }
}
