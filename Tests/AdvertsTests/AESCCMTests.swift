import Testing
@testable import Adverts

@Suite struct AESCCMTests {
    // RFC 3610, packet vector #1: 8-byte tag, 13-byte nonce, 8 bytes of associated data.
    let key = bytes("c0c1c2c3c4c5c6c7c8c9cacbcccdcecf")
    let nonce = bytes("00000003020100a0a1a2a3a4a5")
    let header = bytes("0001020304050607")
    let plain = bytes("08090a0b0c0d0e0f101112131415161718191a1b1c1d1e")
    let sealed = bytes("588c979a61c663d2f066d0c2c0f989806d5f6b61dac384")
    let tag = bytes("17e8d12cfdf926e0")

    @Test func rfc3610Vector() throws {
        let out = try #require(AESCCM.encrypt(key: key, nonce: nonce, plaintext: plain, tagLength: 8,
                                              associatedData: header))
        #expect(out.ciphertext == sealed && out.tag == tag)
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: sealed, tag: tag, associatedData: header) == plain)
    }

    @Test func anyChangeFailsAuthentication() {
        var badTag = tag
        badTag[0] ^= 1
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: sealed, tag: badTag, associatedData: header) == nil)
        var badText = sealed
        badText[5] ^= 0x80
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: badText, tag: tag, associatedData: header) == nil)
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: sealed, tag: tag, associatedData: []) == nil)
    }

    @Test func outOfBoundsInputsAreRefusedNotCrashed() {
        #expect(AESCCM.decrypt(key: Array(key.prefix(15)), nonce: nonce, ciphertext: sealed, tag: tag) == nil)
        #expect(AESCCM.decrypt(key: key, nonce: Array(nonce.prefix(6)), ciphertext: sealed, tag: tag) == nil)
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: sealed, tag: Array(tag.prefix(3))) == nil)
        #expect(AESCCM.encrypt(key: key, nonce: nonce, plaintext: plain, tagLength: 5) == nil)
    }

    @Test func emptyMessageRoundTrips() throws {
        let out = try #require(AESCCM.encrypt(key: key, nonce: nonce, plaintext: [], tagLength: 4))
        #expect(out.ciphertext.isEmpty && out.tag.count == 4)
        #expect(AESCCM.decrypt(key: key, nonce: nonce, ciphertext: [], tag: out.tag) == [])
    }
}
