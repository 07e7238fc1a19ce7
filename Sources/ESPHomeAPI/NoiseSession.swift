/// `Noise_NNpsk0_25519_ChaChaPoly_SHA256` (the Noise Protocol Framework, revision 34), the handshake ESPHome's
/// encrypted API uses: `-> psk, e` then `<- e, ee`, both sides knowing one 32-byte pre-shared key. A value type that
/// takes messages and returns messages; no I/O, and the ephemeral key can be given (the test vectors do).
///
/// Invariants: a message is read or written only in its turn (`Failure.outOfTurn` otherwise); after a failed read
/// the handshake is dead (`Failure.dead`), since its hash has been mixed with the bad message; the transport
/// ciphers exist only after the second message, and each counts its own nonces from 0.
struct NoiseHandshake {
    enum Role { case initiator, responder }

    enum Failure: Error, Equatable {
        case outOfTurn
        case tooShort
        /// The peer's message did not authenticate: a wrong pre-shared key (or a corrupted message).
        case decryptFailed
        case badKey
        case dead
    }

    static let protocolName = Array("Noise_NNpsk0_25519_ChaChaPoly_SHA256".utf8)

    let role: Role
    private var symmetric: SymmetricState
    private let psk: [UInt8]
    private var ephemeral: [UInt8]
    private var ephemeralPublic: [UInt8] = []
    private var peerEphemeral: [UInt8] = []
    /// 0: message 1 is next, 1: message 2 is next, 2: done.
    private var step = 0
    private var failed = false
    /// Set once the handshake is done: (this side's sending cipher, its receiving one).
    private(set) var transport: (send: NoiseCipher, receive: NoiseCipher)?

    /// `ephemeral`: the private key to use (tests); nil draws one.
    init(role: Role, psk: [UInt8], prologue: [UInt8], ephemeral: [UInt8]? = nil) {
        self.role = role
        self.psk = psk
        self.ephemeral = ephemeral ?? NoiseHandshake.randomKey()
        symmetric = SymmetricState(protocolName: Self.protocolName)
        symmetric.mixHash(prologue)
    }

    /// The handshake hash, for channel binding and the test vectors.
    var handshakeHash: [UInt8] { symmetric.h }

    mutating func writeMessage(_ payload: [UInt8] = []) throws(Failure) -> [UInt8] {
        guard !failed else { throw .dead }
        guard (role == .initiator && step == 0) || (role == .responder && step == 1) else { throw .outOfTurn }
        guard let publicKey = NoiseCrypto.x25519Public(ephemeral) else { throw .badKey }
        ephemeralPublic = publicKey
        var out: [UInt8] = []
        if step == 0 { symmetric.mixKeyAndHash(psk) }
        out += publicKey
        symmetric.mixHash(publicKey)
        symmetric.mixKey(publicKey)                 // psk modes mix every ephemeral key into the key too
        if step == 1 {
            guard let shared = NoiseCrypto.x25519(ephemeral, peerEphemeral) else { throw .badKey }
            symmetric.mixKey(shared)
        }
        out += symmetric.encryptAndHash(payload)
        advance()
        return out
    }

    /// The payload the peer's message carried.
    mutating func readMessage(_ message: [UInt8]) throws(Failure) -> [UInt8] {
        guard !failed else { throw .dead }
        guard (role == .responder && step == 0) || (role == .initiator && step == 1) else { throw .outOfTurn }
        guard message.count >= 32 + NoiseCrypto.tagLength else {
            failed = true
            throw .tooShort
        }
        if step == 0 { symmetric.mixKeyAndHash(psk) }
        peerEphemeral = Array(message[..<32])
        symmetric.mixHash(peerEphemeral)
        symmetric.mixKey(peerEphemeral)
        if step == 1 {
            guard let shared = NoiseCrypto.x25519(ephemeral, peerEphemeral) else {
                failed = true
                throw .badKey
            }
            symmetric.mixKey(shared)
        }
        guard let payload = symmetric.decryptAndHash(Array(message[32...])) else {
            failed = true
            throw .decryptFailed
        }
        advance()
        return payload
    }

    private mutating func advance() {
        step += 1
        guard step == 2 else { return }
        let (first, second) = symmetric.split()
        transport = role == .initiator ? (first, second) : (second, first)
        ephemeral = []
    }

    static func randomKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

/// One direction of the transport: a key and its nonce counter.
struct NoiseCipher {
    let key: [UInt8]
    private(set) var counter: UInt64 = 0

    init(key: [UInt8]) { self.key = key }

    mutating func seal(_ plaintext: [UInt8]) -> [UInt8] {
        defer { counter += 1 }
        return NoiseCrypto.seal(key: key, counter: counter, ad: [], plaintext)
    }

    /// nil when it does not authenticate; the counter moves only on success.
    mutating func open(_ ciphertext: [UInt8]) -> [UInt8]? {
        guard let plaintext = NoiseCrypto.open(key: key, counter: counter, ad: [], ciphertext) else { return nil }
        counter += 1
        return plaintext
    }
}

/// The Noise SymmetricState: the chaining key, the handshake hash, and the key (with its nonce) once there is one.
private struct SymmetricState {
    var ck: [UInt8]
    var h: [UInt8]
    var k: [UInt8]?
    var n: UInt64 = 0

    init(protocolName: [UInt8]) {
        h = protocolName.count <= 32 ? protocolName + [UInt8](repeating: 0, count: 32 - protocolName.count)
            : NoiseCrypto.sha256(protocolName)
        ck = h
    }

    mutating func mixHash(_ data: [UInt8]) { h = NoiseCrypto.sha256(h, data) }

    mutating func mixKey(_ input: [UInt8]) {
        let out = NoiseCrypto.hkdf(chainingKey: ck, input, outputs: 2)
        ck = out[0]
        k = out[1]
        n = 0
    }

    mutating func mixKeyAndHash(_ input: [UInt8]) {
        let out = NoiseCrypto.hkdf(chainingKey: ck, input, outputs: 3)
        ck = out[0]
        mixHash(out[1])
        k = out[2]
        n = 0
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        guard let k else {
            mixHash(plaintext)
            return plaintext
        }
        let ciphertext = NoiseCrypto.seal(key: k, counter: n, ad: h, plaintext)
        n += 1
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) -> [UInt8]? {
        guard let k else {
            mixHash(ciphertext)
            return ciphertext
        }
        guard let plaintext = NoiseCrypto.open(key: k, counter: n, ad: h, ciphertext) else { return nil }
        n += 1
        mixHash(ciphertext)
        return plaintext
    }

    func split() -> (NoiseCipher, NoiseCipher) {
        let out = NoiseCrypto.hkdf(chainingKey: ck, [], outputs: 2)
        return (NoiseCipher(key: out[0]), NoiseCipher(key: out[1]))
    }
}
