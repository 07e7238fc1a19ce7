import Glibc
import LoopHosting
import Synchronization
import Testing
@testable import ESPHomeAPI
@testable import ESPHomeServer

/// The server on real sockets, on a `ThreadLoopHost`: the owner (`Owner`) answers as the bridge's proxy would.
@Suite struct APIServerTests {
    static let identity = APIConnection.Identity(name: "bridge-1", macAddress: "AA:BB:CC:DD:EE:FF")
    static let key: [UInt8] = (0..<32).map { UInt8($0) }

    /// Answers a Ping (7) with a Pong (8), and type 100 with `count` messages of 1 KiB (to fill a queue).
    final class Owner: APIServerDelegate, @unchecked Sendable {
        let events = Mutex<[String]>([])
        var server: APIServer?

        func clientReady(_ client: APIClientID, peer: String) {
            events.withLock { $0.append("ready \(client.value) \(peer)") }
        }

        func received(_ message: APIConnection.Message, from client: APIClientID) {
            events.withLock { $0.append("message \(client.value) \(message.type)") }
            switch message.type {
            case 7: server?.send(APIConnection.Message(type: 8, payload: []), to: client)
            case 100:
                for _ in 0..<Int(message.payload.first ?? 0) * 16 {
                    server?.send(APIConnection.Message(type: 101, payload: [UInt8](repeating: 0xAB, count: 1024)),
                                 to: client)
                }
            case 5: server?.close(client)
            default: break
            }
        }

        func clientClosed(_ client: APIClientID, reason: APIServerCloseReason?) {
            events.withLock { $0.append("closed \(client.value) \(reason.map { "\($0)" } ?? "by client")") }
        }

        /// Waits (with a deadline) until an event satisfies `match`.
        func waitFor(_ match: (String) -> Bool) -> Bool {
            let deadline = monotonicNanoseconds() + 5_000_000_000
            while monotonicNanoseconds() < deadline {
                if events.withLock({ $0.contains(where: match) }) { return true }
                var request = timespec(tv_sec: 0, tv_nsec: 2_000_000)
                nanosleep(&request, nil)
            }
            return false
        }
    }

    /// Starts a server on a free port and gives `body` the port; stops it afterwards.
    static func withServer(security: APIConnection.Security, limits: APIServerLimits = APIServerLimits(),
                           _ body: (UInt16, Owner) throws -> Void) throws {
        let host = ThreadLoopHost()
        defer { host.shutdown() }
        let owner = Owner()
        let server = APIServer(listen: "127.0.0.1:0", security: security, identity: identity, limits: limits,
                               host: host, delegate: owner)
        owner.server = server
        try server.start()
        defer { server.stop() }
        try body(server.port, owner)
    }

    /// A blocking client socket with a receive timeout.
    struct Socket {
        let fd: Int32

        init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(rc == 0)
        }

        func write(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Exactly `count` bytes, or fewer when the server closed (or nothing came within the timeout).
        func read(_ count: Int) -> [UInt8] {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while out.count < count {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - out.count), 0) }
                if got <= 0 { break }
                out += buffer[..<got]
            }
            return out
        }

        /// True when the server closed the connection (end of stream), after reading whatever it sent before.
        func closedByServer() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if got == 0 { return true }
                if got < 0 { return errno == ECONNRESET }
            }
        }

        func close() { Glibc.close(fd) }
    }

    @Test func aPlaintextClientIsAnswered() throws {
        try Self.withServer(security: .plaintext) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            client.write(APIFrameWriter.plaintext(type: 7, []))
            #expect(client.read(3) == [0x00, 0x00, 0x08])
            #expect(owner.waitFor { $0.hasPrefix("ready 1 127.0.0.1") })
        }
    }

    @Test func aNoiseClientIsAnsweredAfterItsHandshake() throws {
        try Self.withServer(security: .noise(psk: Self.key)) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            var handshake = NoiseHandshake(role: .initiator, psk: Self.key, prologue: APIConnection.prologue)
            client.write([0x01, 0x00, 0x00] + APIFrameWriter.noise([0x00] + (try handshake.writeMessage())))
            var reader = APIFrameReader()
            var frames: [[UInt8]] = []
            while frames.count < 2 {
                let byte = client.read(1)
                try #require(byte.count == 1)
                frames += try reader.read(byte).compactMap { if case .noise(let body) = $0 { body } else { nil } }
            }
            #expect(frames[0].first == 0x01)
            _ = try handshake.readMessage(Array(frames[1].dropFirst()))
            var (send, receive) = try #require(handshake.transport)
            client.write(APIFrameWriter.noise(send.seal(APIFrameWriter.noisePlaintext(type: 7, []))))
            let header = client.read(3)
            try #require(header.count == 3)
            let body = client.read(Int(header[1]) << 8 | Int(header[2]))
            let plain = try #require(receive.open(body).flatMap(APIFrameWriter.parseNoisePlaintext))
            #expect(plain.type == 8)
            #expect(owner.waitFor { $0 == "message 1 7" })
        }
    }

    @Test func aWrongKeyGetsTheRefusalAndNothingReachesTheOwner() throws {
        try Self.withServer(security: .noise(psk: Self.key)) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            var handshake = NoiseHandshake(role: .initiator, psk: [UInt8](repeating: 9, count: 32),
                                           prologue: APIConnection.prologue)
            client.write([0x01, 0x00, 0x00] + APIFrameWriter.noise([0x00] + (try handshake.writeMessage())))
            #expect(client.closedByServer())
            #expect(owner.waitFor { $0.hasPrefix("closed 1 handshakeFailed") })
            #expect(!owner.events.withLock { $0.contains { $0.hasPrefix("ready") || $0.hasPrefix("message") } })
        }
    }

    @Test func aMalformedClientIsClosedAndAnotherGoesOn() throws {
        try Self.withServer(security: .plaintext) { port, owner in
            let good = try Socket(port: port)
            defer { good.close() }
            let bad = try Socket(port: port)
            defer { bad.close() }
            bad.write([0x00, 0xFF, 0xFF, 0xFF, 0x7F])   // a length far above 64 KiB
            #expect(bad.closedByServer())
            good.write(APIFrameWriter.plaintext(type: 7, []))
            #expect(good.read(3) == [0x00, 0x00, 0x08])
            #expect(owner.waitFor { $0.hasPrefix("closed 2 malformed") })
        }
    }

    @Test func aClientThatDoesNotReadIsClosedPastItsQueue() throws {
        var limits = APIServerLimits()
        limits.queuedBytes = 64 * 1024
        try Self.withServer(security: .plaintext, limits: limits) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            var small: Int32 = 4096
            setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            client.write(APIFrameWriter.plaintext(type: 100, [255]))   // 4 MiB asked for, never read
            #expect(owner.waitFor { $0 == "closed 1 not reading what it is sent" })
        }
    }

    @Test func aClientPastTheLimitIsRefused() throws {
        var limits = APIServerLimits()
        limits.clients = 1
        try Self.withServer(security: .plaintext, limits: limits) { port, owner in
            let first = try Socket(port: port)
            defer { first.close() }
            #expect(owner.waitFor { $0.hasPrefix("ready 1") })
            let second = try Socket(port: port)
            defer { second.close() }
            #expect(second.closedByServer())
            first.write(APIFrameWriter.plaintext(type: 7, []))
            #expect(first.read(3) == [0x00, 0x00, 0x08])
        }
    }

    @Test func theOwnerClosesAClientAfterItsAnswer() throws {
        try Self.withServer(security: .plaintext) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            client.write(APIFrameWriter.plaintext(type: 7, []) + APIFrameWriter.plaintext(type: 5, []))
            #expect(client.read(3) == [0x00, 0x00, 0x08])
            #expect(client.closedByServer())
            #expect(owner.waitFor { $0 == "closed 1 closed by the bridge" })
        }
    }

    @Test func aSilentClientTimesOut() throws {
        var limits = APIServerLimits()
        limits.idle = .milliseconds(200)
        try Self.withServer(security: .plaintext, limits: limits) { port, owner in
            let client = try Socket(port: port)
            defer { client.close() }
            #expect(client.closedByServer())
            #expect(owner.waitFor { $0 == "closed 1 timed out" })
        }
    }
}
