internal import CCrypto

/// The primitives of `Noise_NNpsk0_25519_ChaChaPoly_SHA256` from libcrypto, which the daemon links already (through
/// libmosquitto, and for encrypted broadcasts): X25519, ChaCha20-Poly1305 (IETF, 96-bit nonce), SHA-256 and the
/// HMAC the Noise HKDF is made of. Nothing here keeps state between calls.
enum NoiseCrypto {
    static let keyLength = 32
    static let tagLength = 16

    static func sha256(_ parts: [UInt8]...) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        var length: UInt32 = 0
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { fatalError("EVP_DigestInit_ex failed") }
        for part in parts {
            part.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        }
        guard EVP_DigestFinal_ex(context, &out, &length) == 1 else { fatalError("EVP_DigestFinal_ex failed") }
        return out
    }

    /// RFC 2104 over SHA-256 (block 64 bytes): the Noise HKDF's building block.
    static func hmac(key: [UInt8], _ data: [UInt8]...) -> [UInt8] {
        var block = key.count > 64 ? sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = sha256(block.map { $0 ^ 0x36 }, data.flatMap { $0 })
        return sha256(block.map { $0 ^ 0x5C }, inner)
    }

    /// Noise's HKDF: two or three 32-byte outputs.
    static func hkdf(chainingKey: [UInt8], _ input: [UInt8], outputs: Int) -> [[UInt8]] {
        let temp = hmac(key: chainingKey, input)
        var out: [[UInt8]] = []
        var previous: [UInt8] = []
        for index in 1...outputs {
            previous = hmac(key: temp, previous, [UInt8(index)])
            out.append(previous)
        }
        return out
    }

    /// A private key's public key; nil for a key libcrypto refuses.
    static func x25519Public(_ privateKey: [UInt8]) -> [UInt8]? {
        guard let key = privateKey.withUnsafeBufferPointer({
            EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, $0.baseAddress, $0.count)
        }) else { return nil }
        defer { EVP_PKEY_free(key) }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &out, &length) == 1, length == 32 else { return nil }
        return out
    }

    /// The shared secret; nil for a peer key that gives none (all zero: a low-order point).
    static func x25519(_ privateKey: [UInt8], _ peerPublic: [UInt8]) -> [UInt8]? {
        guard peerPublic.count == 32,
              let own = privateKey.withUnsafeBufferPointer({
                  EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, $0.baseAddress, $0.count)
              }) else { return nil }
        defer { EVP_PKEY_free(own) }
        guard let peer = peerPublic.withUnsafeBufferPointer({
            EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, $0.baseAddress, $0.count)
        }) else { return nil }
        defer { EVP_PKEY_free(peer) }
        guard let context = EVP_PKEY_CTX_new(own, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer) == 1,
              EVP_PKEY_derive(context, &out, &length) == 1, length == 32 else { return nil }
        return out
    }

    /// Noise's nonce: 32 zero bits, then the counter little-endian.
    private static func nonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) }
    }

    static func seal(key: [UInt8], counter: UInt64, ad: [UInt8], _ plaintext: [UInt8]) -> [UInt8] {
        guard let result = aead(encrypt: true, key: key, counter: counter, ad: ad, plaintext) else {
            fatalError("ChaCha20-Poly1305 encryption failed")
        }
        return result
    }

    /// nil when the tag does not match.
    static func open(key: [UInt8], counter: UInt64, ad: [UInt8], _ ciphertext: [UInt8]) -> [UInt8]? {
        guard ciphertext.count >= tagLength else { return nil }
        return aead(encrypt: false, key: key, counter: counter, ad: ad, ciphertext)
    }

    private static func aead(encrypt: Bool, key: [UInt8], counter: UInt64, ad: [UInt8], _ input: [UInt8]) -> [UInt8]? {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let iv = nonce(counter)
        let body = encrypt ? input : Array(input.dropLast(tagLength))
        var tag = encrypt ? [UInt8](repeating: 0, count: tagLength) : Array(input.suffix(tagLength))
        var out = [UInt8](repeating: 0, count: body.count + tagLength)
        var length: Int32 = 0
        let initialise = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        let update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate
        guard initialise(context, EVP_chacha20_poly1305(), nil, key, iv) == 1 else { return nil }
        if !encrypt {
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), &tag) == 1 else { return nil }
        }
        if !ad.isEmpty {
            guard update(context, nil, &length, ad, Int32(ad.count)) == 1 else { return nil }
        }
        var written = 0
        if !body.isEmpty {
            guard update(context, &out, &length, body, Int32(body.count)) == 1 else { return nil }
            written = Int(length)
        }
        let finished = out.withUnsafeMutableBufferPointer { buffer in
            encrypt ? EVP_EncryptFinal_ex(context, buffer.baseAddress! + written, &length)
                : EVP_DecryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard finished == 1 else { return nil }
        written += Int(length)
        if encrypt {
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), &tag) == 1 else { return nil }
            return Array(out[..<written]) + tag
        }
        return Array(out[..<written])
    }
}
