import Testing
@testable import ESPHomeAPI

/// The Noise handshake against the Noise Protocol Framework's published vector for
/// `Noise_NNpsk0_25519_ChaChaPoly_SHA256` (the cacophony suite, vectors/cacophony.txt), and its failures.
@Suite struct NoiseTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    // cacophony.txt, the vector named Noise_NNpsk0_25519_ChaChaPoly_SHA256.
    static let prologue = bytes("4a6f686e2047616c74")
    static let psk = bytes("54686973206973206d7920417573747269616e20706572737065637469766521")
    static let initEphemeral = bytes("893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a")
    static let respEphemeral = bytes("bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b")
    static let handshakeHash = "f4d03dc34495c95729ea6de9e1b59004b59733102488b3e24bc441e0be208eaf"
    static let messages: [(payload: String, ciphertext: String)] = [
        ("4c756477696720766f6e204d69736573",
         "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c794479b962b8aff8485742ac32f905ba45369e2465fb59e138a93d67a0d1266b6a54"),
        ("4d757272617920526f746862617264",
         "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843d6062704d5a9c422a8e834423f8c1feada7e8d0d910a1a2cd030fb584221e3"),
        ("462e20412e20486179656b", "e632c3763d7669067383433197a3baddf146e9e70ad4b4e9e59e0f"),
        ("4361726c204d656e676572", "64c6bee32ea91c8474bb4c21d7a700109ad45af77b29764ba5eb1e"),
        ("4a65616e2d426170746973746520536179", "e2fa0bed0603b62d3ccac2ecabbf3fe33f3e86514909b323361626266cb2471cc8"),
        ("457567656e2042f6686d20766f6e2042617765726b",
         "0c01dc9cec1fe4ddd692e8dd32188aa351088dc91183639a53b57aa4692b5ebdef8b8ca111"),
    ]

    @Test func thePublishedVector() throws {
        var initiator = NoiseHandshake(role: .initiator, psk: Self.psk, prologue: Self.prologue,
                                       ephemeral: Self.initEphemeral)
        var responder = NoiseHandshake(role: .responder, psk: Self.psk, prologue: Self.prologue,
                                       ephemeral: Self.respEphemeral)
        let first = try initiator.writeMessage(Self.bytes(Self.messages[0].payload))
        #expect(Self.hex(first) == Self.messages[0].ciphertext)
        #expect(try responder.readMessage(first) == Self.bytes(Self.messages[0].payload))
        let second = try responder.writeMessage(Self.bytes(Self.messages[1].payload))
        #expect(Self.hex(second) == Self.messages[1].ciphertext)
        #expect(try initiator.readMessage(second) == Self.bytes(Self.messages[1].payload))
        #expect(Self.hex(initiator.handshakeHash) == Self.handshakeHash)
        #expect(Self.hex(responder.handshakeHash) == Self.handshakeHash)
        var (iSend, iReceive) = try #require(initiator.transport)
        var (rSend, rReceive) = try #require(responder.transport)
        for (index, message) in Self.messages.enumerated().dropFirst(2) {
            let payload = Self.bytes(message.payload)
            let sealed = index % 2 == 0 ? iSend.seal(payload) : rSend.seal(payload)
            #expect(Self.hex(sealed) == message.ciphertext, "message \(index)")
            let opened = index % 2 == 0 ? rReceive.open(sealed) : iReceive.open(sealed)
            #expect(opened == payload, "message \(index)")
        }
    }

    @Test func aWrongKeyFailsTheFirstMessageAndKillsTheHandshake() throws {
        var initiator = NoiseHandshake(role: .initiator, psk: Self.psk, prologue: Self.prologue)
        var responder = NoiseHandshake(role: .responder, psk: [UInt8](repeating: 7, count: 32), prologue: Self.prologue)
        let first = try initiator.writeMessage()
        #expect(throws: NoiseHandshake.Failure.decryptFailed) { try responder.readMessage(first) }
        #expect(throws: NoiseHandshake.Failure.dead) { try responder.writeMessage() }
    }

    @Test func messagesOutOfTurnOrTooShortAreRefused() throws {
        var responder = NoiseHandshake(role: .responder, psk: Self.psk, prologue: Self.prologue)
        #expect(throws: NoiseHandshake.Failure.outOfTurn) { try responder.writeMessage() }
        #expect(throws: NoiseHandshake.Failure.tooShort) { try responder.readMessage([1, 2, 3]) }
    }

    @Test func aTamperedTransportMessageDoesNotOpenAndTheCounterStays() throws {
        var initiator = NoiseHandshake(role: .initiator, psk: Self.psk, prologue: Self.prologue)
        var responder = NoiseHandshake(role: .responder, psk: Self.psk, prologue: Self.prologue)
        _ = try responder.readMessage(try initiator.writeMessage())
        _ = try initiator.readMessage(try responder.writeMessage())
        var send = try #require(initiator.transport).send
        var receive = try #require(responder.transport).receive
        var sealed = send.seal([1, 2, 3])
        sealed[0] ^= 1
        #expect(receive.open(sealed) == nil)
        #expect(receive.counter == 0)
        sealed[0] ^= 1
        #expect(receive.open(sealed) == [1, 2, 3])
    }
}
