import Testing
@testable import ESPHomeAPI

/// ESPHome's two framings, read from bytes however they arrive, and refused when malformed.
@Suite struct APIFramesTests {
    @Test func plaintextMessagesArriveWholeWhateverTheSplit() throws {
        let hello = APIFrameWriter.plaintext(type: 1, Array("client".utf8))
        let ping = APIFrameWriter.plaintext(type: 7, [])
        let big = APIFrameWriter.plaintext(type: 300, [UInt8](repeating: 9, count: 200))
        let stream = hello + ping + big
        for split in [1, 2, 3, 7, stream.count] {
            var reader = APIFrameReader()
            var frames: [APIFrameReader.Frame] = []
            var index = 0
            while index < stream.count {
                let end = min(index + split, stream.count)
                frames += try reader.read(stream[index..<end])
                index = end
            }
            #expect(frames == [.message(type: 1, payload: Array("client".utf8)), .message(type: 7, payload: []),
                               .message(type: 300, payload: [UInt8](repeating: 9, count: 200))], "split \(split)")
            #expect(reader.framing == .plaintext)
            #expect(reader.pending == 0)
        }
    }

    @Test func noiseFramesAndTheirPlaintext() throws {
        var reader = APIFrameReader()
        let hello: [UInt8] = [0x01, 0x00, 0x00]
        let handshake = APIFrameWriter.noise([0x00] + [UInt8](repeating: 5, count: 48))
        #expect(try reader.read(hello + handshake.prefix(10)) == [.noise([])])
        #expect(try reader.read(handshake.dropFirst(10)) == [.noise([0x00] + [UInt8](repeating: 5, count: 48))])
        let plain = APIFrameWriter.noisePlaintext(type: 0x1234, [1, 2, 3])
        #expect(plain == [0x12, 0x34, 0x00, 0x03, 1, 2, 3])
        #expect(APIFrameWriter.parseNoisePlaintext(plain)! == (0x1234, [1, 2, 3]))
        #expect(APIFrameWriter.parseNoisePlaintext([0, 1, 0, 9, 1]) == nil)
    }

    @Test func malformedInputEndsTheConnection() {
        var unknown = APIFrameReader()
        #expect(throws: APIFrameReader.Failure.badMarker(0x47)) { try unknown.read(Array("GET / HTTP/1.1".utf8)) }
        #expect(throws: APIFrameReader.Failure.badMarker(0x47)) { try unknown.read([0x00]) }
        var mixed = APIFrameReader()
        #expect(throws: APIFrameReader.Failure.badMarker(0x01)) {
            try mixed.read(APIFrameWriter.plaintext(type: 7, []) + [0x01, 0, 0])
        }
        var huge = APIFrameReader()
        #expect(throws: APIFrameReader.Failure.tooLong(1 << 40)) { try huge.read([0x00] + APIFrameWriter.varint(1 << 40)) }
        var endless = APIFrameReader()
        #expect(throws: APIFrameReader.Failure.badVarint) { try endless.read([0x00] + [UInt8](repeating: 0xFF, count: 11)) }
    }

    @Test func aLengthNotYetArrivedKeepsNothingBeyondWhatCame() throws {
        var reader = APIFrameReader()
        #expect(try reader.read([0x00, 0xFF, 0xFF, 0x03]) == [])      // 65535 announced, nothing of it sent
        #expect(reader.pending == 4)
    }
}
