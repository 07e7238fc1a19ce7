import Testing
@testable import ESPHomeAPI

/// The connection machine as a client sees it: aioesphomeapi's Noise client is played by `NoiseHandshake` in the
/// initiator role, framing as aioesphomeapi's `_frame_helper/noise.py` writes it.
@Suite struct APIConnectionTests {
    static let key: [UInt8] = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    static let identity = APIConnection.Identity(name: "bridge-1", macAddress: "AA:BB:CC:DD:EE:FF")

    /// A Noise client: its hello and first handshake message as aioesphomeapi sends them in one write.
    struct Client {
        var handshake: NoiseHandshake
        var send: NoiseCipher?
        var receive: NoiseCipher?
        var reader = APIFrameReader()

        init(key: [UInt8]) {
            handshake = NoiseHandshake(role: .initiator, psk: key, prologue: APIConnection.prologue)
        }

        mutating func opening() throws -> [UInt8] {
            let first = try handshake.writeMessage()
            return [0x01, 0x00, 0x00] + APIFrameWriter.noise([0x00] + first)
        }

        /// The server's frames, each a Noise frame's bytes.
        mutating func frames(_ bytes: [UInt8]) throws -> [[UInt8]] {
            try reader.read(bytes).map { frame in
                guard case .noise(let body) = frame else { throw Unexpected() }
                return body
            }
        }

        mutating func finish(_ answer: [UInt8]) throws {
            #expect(answer.first == 0x00)
            _ = try handshake.readMessage(Array(answer.dropFirst()))
            let transport = try #require(handshake.transport)
            send = transport.send
            receive = transport.receive
        }

        mutating func encrypt(type: UInt32, _ payload: [UInt8]) -> [UInt8] {
            APIFrameWriter.noise(send!.seal(APIFrameWriter.noisePlaintext(type: type, payload)))
        }

        mutating func decrypt(_ frame: [UInt8]) -> (type: UInt32, payload: [UInt8])? {
            receive!.open(frame).flatMap(APIFrameWriter.parseNoisePlaintext)
        }
    }

    struct Unexpected: Error {}

    @Test func aNoiseClientWithTheKeyExchangesMessagesBothWays() throws {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        var client = Client(key: Self.key)
        #expect(!server.isReady)
        let out = server.receive(try client.opening())
        #expect(out.closing == nil)
        let frames = try client.frames(out.bytes)
        #expect(frames.count == 2)
        #expect(frames[0] == [0x01] + Array("bridge-1".utf8) + [0] + Array("AA:BB:CC:DD:EE:FF".utf8) + [0])
        try client.finish(frames[1])
        #expect(server.isReady)

        let hello = server.receive(client.encrypt(type: 1, [0x0A, 0x02, 0x68, 0x61]))
        #expect(hello.messages == [APIConnection.Message(type: 1, payload: [0x0A, 0x02, 0x68, 0x61])])
        let reply = server.frame(APIConnection.Message(type: 2, payload: [1, 2, 3]))
        let replyFrames = try client.frames(try #require(reply))
        let decrypted = client.decrypt(replyFrames[0])
        try #require(decrypted != nil)
        #expect(decrypted?.type == 2 && decrypted?.payload == [1, 2, 3])
    }

    @Test func bytesArrivingOneByOneMakeTheSameMessages() throws {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        var client = Client(key: Self.key)
        var answered: [UInt8] = []
        for byte in try client.opening() { answered += server.receive([byte]).bytes }
        try client.finish(try client.frames(answered)[1])
        var messages: [APIConnection.Message] = []
        let stream = client.encrypt(type: 7, []) + client.encrypt(type: 9, [5])
        for byte in stream { messages += server.receive([byte]).messages }
        #expect(messages.map(\.type) == [7, 9])
    }

    @Test func aWrongKeyIsRefusedAsESPHomeRefusesIt() throws {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        var client = Client(key: [UInt8](repeating: 1, count: 32))
        let out = server.receive(try client.opening())
        #expect(out.closing == .handshakeFailed("wrong key"))
        let frames = try client.frames(out.bytes)
        #expect(frames.last == [0x01] + Array("Handshake MAC failure".utf8))
        #expect(server.isClosed)
        #expect(server.receive([0x01, 0x00, 0x00]) == APIConnection.Output())
        let after = server.frame(APIConnection.Message(type: 8, payload: []))
        #expect(after == nil)
    }

    @Test func aPlaintextClientOfAnEncryptedServerIsToldToUseTheKey() {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        let out = server.receive(APIFrameWriter.plaintext(type: 1, [0x0A, 0x00]))
        #expect(out.closing == .plaintextRefused)
        #expect(out.messages.isEmpty)
        #expect(out.bytes.first == 0x01)   // what aioesphomeapi reads as "requires encryption"
    }

    @Test func aNoiseClientOfAPlaintextServerIsToldItIsPlaintext() throws {
        var server = APIConnection(security: .plaintext, identity: Self.identity)
        var client = Client(key: Self.key)
        let out = server.receive(try client.opening())
        #expect(out.closing == .encryptionRefused)
        #expect(out.bytes.count >= 3 && out.bytes.first == 0x00)
    }

    @Test func plaintextMessagesBothWays() throws {
        var server = APIConnection(security: .plaintext, identity: Self.identity)
        #expect(server.isReady)
        let out = server.receive(APIFrameWriter.plaintext(type: 7, []) + APIFrameWriter.plaintext(type: 9, [1]))
        #expect(out.messages.map(\.type) == [7, 9])
        let pong = server.frame(APIConnection.Message(type: 8, payload: []))
        #expect(pong == [0x00, 0x00, 0x08])
        let tooLong = server.frame(APIConnection.Message(type: 8, payload: [UInt8](repeating: 0, count: 70_000)))
        #expect(tooLong == nil)
    }

    @Test func aTamperedMessageEndsTheConnection() throws {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        var client = Client(key: Self.key)
        try client.finish(try client.frames(server.receive(try client.opening()).bytes)[1])
        var frame = client.encrypt(type: 7, [])
        frame[frame.count - 1] ^= 0x01
        let out = server.receive(frame)
        #expect(out.closing == .decryptFailed)
        #expect(out.messages.isEmpty)
    }

    @Test func aLengthAboveTheBoundEndsTheConnectionBeforeItsBytesArrive() {
        var server = APIConnection(security: .plaintext, identity: Self.identity)
        // 0x00, varint 1,000,000: nothing of the payload is held.
        let out = server.receive([0x00, 0xC0, 0x84, 0x3D])
        #expect(out.closing == .malformed("tooLong(1000000)"))
        #expect(server.pendingBytes == 0)
    }

    @Test func aHandshakeFrameWithoutItsMarkerIsRefused() throws {
        var server = APIConnection(security: .noise(psk: Self.key), identity: Self.identity)
        let out = server.receive([0x01, 0x00, 0x00] + APIFrameWriter.noise([0x05, 1, 2, 3]))
        #expect(out.closing == .handshakeFailed("unknown handshake protocol"))
    }
}
