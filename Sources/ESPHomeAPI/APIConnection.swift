/// One client's connection to the API server as values: the bytes it sent in, its messages and the bytes to answer
/// out, no I/O (the server's sockets are `ESPHomeServer`'s). Owns the framing and, with a key, the Noise handshake
/// and transport; what a message means is `APISession`'s.
///
/// Invariants:
/// - With a key, nothing a client sends becomes a message before its handshake proved it holds the key: a wrong key,
///   a plaintext frame or a handshake out of order ends the connection, after one refusal the client can show.
/// - Without a key, only plaintext frames are read; a Noise client is told the server is plaintext and closed.
/// - Once `closing` is set, nothing more is read or sent but the bytes already returned.
public struct APIConnection {
    public enum Security: Sendable, Equatable {
        case plaintext
        /// The 32-byte key shared with the client (ESPHome's `api: encryption: key:`, decoded).
        case noise(psk: [UInt8])
    }

    /// What the server's hello names (the Noise handshake's first answer): aioesphomeapi compares them with the
    /// name and MAC it expects, when it expects any.
    public struct Identity: Sendable, Equatable {
        public var name: String
        public var macAddress: String

        public init(name: String, macAddress: String) {
            self.name = name
            self.macAddress = macAddress
        }
    }

    public struct Message: Sendable, Equatable {
        public var type: UInt32
        public var payload: [UInt8]

        public init(type: UInt32, payload: [UInt8]) {
            self.type = type
            self.payload = payload
        }
    }

    public enum CloseReason: Sendable, Equatable {
        case malformed(String)
        case plaintextRefused
        case encryptionRefused
        case handshakeFailed(String)
        case decryptFailed
    }

    /// What one call produced: bytes to send (before closing, when closing), messages for the session.
    public struct Output: Sendable, Equatable {
        public var bytes: [UInt8] = []
        public var messages: [Message] = []
        public var closing: CloseReason?
    }

    private enum Phase {
        /// Noise: waiting for the client's hello frame (aioesphomeapi sends it empty).
        case hello
        /// Noise: waiting for the handshake's first message.
        case handshake(NoiseHandshake)
        case ready(send: NoiseCipher, receive: NoiseCipher)
        case plaintext
        case closed
    }

    /// Noise's prologue as ESPHome sets it: the client's hello frame is not mixed in, this constant is.
    static let prologue = Array("NoiseAPIInit".utf8) + [0, 0]
    /// The largest payload of an encrypted message: a Noise frame is at most 65,535 bytes, of which the type and
    /// length take 4 and the cipher's tag 16.
    public static let maxNoisePayload = 0xFFFF - 4 - NoiseCrypto.tagLength

    private let security: Security
    private let identity: Identity
    private let ephemeral: [UInt8]?
    private var reader = APIFrameReader()
    private var phase: Phase

    /// `ephemeral`: the handshake's key pair's private half, for tests; random otherwise.
    public init(security: Security, identity: Identity, ephemeral: [UInt8]? = nil) {
        self.security = security
        self.identity = identity
        self.ephemeral = ephemeral
        switch security {
        case .plaintext: phase = .plaintext
        case .noise: phase = .hello
        }
    }

    /// Whether messages can be sent: a plaintext connection at once, a Noise one after its handshake.
    public var isReady: Bool {
        switch phase {
        case .plaintext, .ready: true
        case .hello, .handshake, .closed: false
        }
    }

    public var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Bytes held for an incomplete frame (bounded by the frame reader's limit).
    public var pendingBytes: Int { reader.pending }

    public mutating func receive(_ bytes: some Collection<UInt8>) -> Output {
        var output = Output()
        if case .closed = phase { return output }
        if reader.framing == nil, let first = bytes.first {
            switch (security, first) {
            case (.noise, 0x00):
                return close(&output, .plaintextRefused, sending: noiseRefusal("Bad indicator byte"))
            case (.plaintext, 0x01):
                // aioesphomeapi reads a plaintext marker from an encrypted-mode answer as "the device is plaintext".
                return close(&output, .encryptionRefused, sending: APIFrameWriter.plaintext(type: 0, []))
            default:
                break
            }
        }
        let frames: [APIFrameReader.Frame]
        do throws(APIFrameReader.Failure) {
            frames = try reader.read(bytes)
        } catch {
            return close(&output, .malformed("\(error)"), sending: [])
        }
        for frame in frames {
            handle(frame, &output)
            if output.closing != nil { break }
        }
        return output
    }

    /// `message` as bytes to send; nil until the connection is ready, after it closed, or for a payload too long for
    /// the framing.
    public mutating func frame(_ message: Message) -> [UInt8]? {
        switch phase {
        case .plaintext:
            guard message.payload.count <= APIFrameReader.maxPayload else { return nil }
            return APIFrameWriter.plaintext(type: message.type, message.payload)
        case .ready(var send, let receive):
            guard message.payload.count <= Self.maxNoisePayload, message.type <= 0xFFFF else { return nil }
            let sealed = send.seal(APIFrameWriter.noisePlaintext(type: message.type, message.payload))
            phase = .ready(send: send, receive: receive)
            return APIFrameWriter.noise(sealed)
        case .hello, .handshake, .closed:
            return nil
        }
    }

    private mutating func handle(_ frame: APIFrameReader.Frame, _ output: inout Output) {
        switch (phase, frame) {
        case (.plaintext, .message(let type, let payload)):
            output.messages.append(Message(type: type, payload: payload))
        case (.hello, .noise):
            guard case .noise(let psk) = security else { return }
            output.bytes += APIFrameWriter.noise([0x01] + Array(identity.name.utf8) + [0]
                                                 + Array(identity.macAddress.utf8) + [0])
            phase = .handshake(NoiseHandshake(role: .responder, psk: psk, prologue: Self.prologue,
                                              ephemeral: ephemeral))
        case (.handshake(var handshake), .noise(let bytes)):
            guard bytes.first == 0x00 else {
                close(&output, .handshakeFailed("unknown handshake protocol"),
                      sending: noiseRefusal("Bad handshake packet len"))
                return
            }
            do throws(NoiseHandshake.Failure) {
                _ = try handshake.readMessage(Array(bytes.dropFirst()))
                let answer = try handshake.writeMessage()
                guard let transport = handshake.transport else {
                    close(&output, .handshakeFailed("no transport"), sending: noiseRefusal("Handshake error"))
                    return
                }
                output.bytes += APIFrameWriter.noise([0x00] + answer)
                phase = .ready(send: transport.send, receive: transport.receive)
            } catch .decryptFailed {
                // What ESPHome says for a wrong key: aioesphomeapi turns exactly this text into "invalid key".
                close(&output, .handshakeFailed("wrong key"), sending: noiseRefusal("Handshake MAC failure"))
            } catch {
                close(&output, .handshakeFailed("\(error)"), sending: noiseRefusal("Handshake error"))
            }
        case (.ready(let send, var receive), .noise(let bytes)):
            guard let plaintext = receive.open(bytes) else {
                close(&output, .decryptFailed, sending: [])
                return
            }
            phase = .ready(send: send, receive: receive)
            guard let (type, payload) = APIFrameWriter.parseNoisePlaintext(plaintext) else {
                close(&output, .malformed("encrypted message shorter than its header"), sending: [])
                return
            }
            output.messages.append(Message(type: type, payload: payload))
        default:
            close(&output, .malformed("frame out of turn"), sending: [])
        }
    }

    /// A handshake refusal as ESPHome frames it: `0x01` then the reason, in a Noise frame.
    private func noiseRefusal(_ reason: String) -> [UInt8] {
        APIFrameWriter.noise([0x01] + Array(reason.utf8))
    }

    @discardableResult
    private mutating func close(_ output: inout Output, _ reason: CloseReason, sending bytes: [UInt8]) -> Output {
        output.bytes += bytes
        output.closing = reason
        phase = .closed
        return output
    }
}
