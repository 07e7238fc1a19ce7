import CCrypto

/// AES-128-CCM from OpenSSL's libcrypto, which the daemon already loads through libmosquitto: the ciphers of
/// encrypted BTHome and Xiaomi broadcasts, without an AES of our own.
///
/// Each call owns a fresh cipher context (`CipherContext`, freed when the call returns): a context is cheap next to a
/// broadcast's other costs, and keeping none between calls leaves the decoders pure values that any thread may use.
public enum AESCCM {
    /// The plaintext, or nil when the tag does not match (wrong key, wrong nonce, altered bytes) or the inputs are
    /// out of CCM's bounds (key not 16 bytes, nonce not 7–13 bytes, tag not 4–16 bytes and even).
    public static func decrypt(
        key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], associatedData: [UInt8] = []
    ) -> [UInt8]? {
        guard valid(key: key, nonce: nonce, tagLength: tag.count), let context = CipherContext() else { return nil }
        return context.run(encrypt: false, key: key, nonce: nonce, input: ciphertext, tag: tag,
                           associatedData: associatedData)?.output
    }

    /// Ciphertext and tag (`tagLength` bytes): what a device sends; the tests and the differential bench make
    /// encrypted broadcasts with it.
    public static func encrypt(
        key: [UInt8], nonce: [UInt8], plaintext: [UInt8], tagLength: Int, associatedData: [UInt8] = []
    ) -> (ciphertext: [UInt8], tag: [UInt8])? {
        guard valid(key: key, nonce: nonce, tagLength: tagLength), let context = CipherContext() else { return nil }
        guard let result = context.run(encrypt: true, key: key, nonce: nonce, input: plaintext,
                                       tag: [UInt8](repeating: 0, count: tagLength), associatedData: associatedData)
        else { return nil }
        return (result.output, result.tag)
    }

    private static func valid(key: [UInt8], nonce: [UInt8], tagLength: Int) -> Bool {
        key.count == 16 && (7...13).contains(nonce.count) && (4...16).contains(tagLength) && tagLength % 2 == 0
    }
}

/// One `EVP_CIPHER_CTX`, freed with its owner.
private struct CipherContext: ~Copyable {
    let pointer: OpaquePointer

    init?() {
        guard let pointer = EVP_CIPHER_CTX_new() else { return nil }
        self.pointer = pointer
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }

    /// CCM's fixed order of calls: cipher, nonce length, tag, key and nonce, total length, associated data, data.
    /// In decryption the data step itself checks the tag (CCM has no separate final check).
    func run(encrypt: Bool, key: [UInt8], nonce: [UInt8], input: [UInt8], tag: [UInt8],
             associatedData: [UInt8]) -> (output: [UInt8], tag: [UInt8])? {
        let initialise = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        let update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate
        guard initialise(pointer, EVP_aes_128_ccm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1
        else { return nil }
        var tagBytes = tag
        let tagSet = tagBytes.withUnsafeMutableBytes { raw in
            // Encryption only announces the tag length (no tag yet); decryption hands over the received tag.
            EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_SET_TAG, Int32(raw.count), encrypt ? nil : raw.baseAddress)
        }
        guard tagSet == 1, initialise(pointer, nil, nil, key, nonce) == 1 else { return nil }
        var length: Int32 = 0
        guard update(pointer, nil, &length, nil, Int32(input.count)) == 1 else { return nil }
        if !associatedData.isEmpty {
            guard update(pointer, nil, &length, associatedData, Int32(associatedData.count)) == 1 else { return nil }
        }
        // One spare byte: OpenSSL wants a real buffer even for an empty message.
        var output = [UInt8](repeating: 0, count: input.count + 1)
        var source = input
        if source.isEmpty { source = [0] }
        let status = output.withUnsafeMutableBufferPointer { out in
            update(pointer, out.baseAddress, &length, source, Int32(input.count))
        }
        guard status == 1 else { return nil }
        output.removeLast(output.count - input.count)
        guard encrypt else { return (output, tag) }
        var final: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptFinal_ex(pointer, &scratch, &final) == 1 else { return nil }
        let got = tagBytes.withUnsafeMutableBytes { raw in
            EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_GET_TAG, Int32(raw.count), raw.baseAddress)
        }
        return got == 1 ? (output, tagBytes) : nil
    }
}
