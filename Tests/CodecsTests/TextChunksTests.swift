import Testing
@testable import Codecs

@Suite struct TextChunksTests {
    @Test func appendsDelimiterAndSplitsAtTwentyWhenMTUUnknown() {
        let chunks = textChunks(String(repeating: "x", count: 45), mtu: nil)
        #expect(chunks.map(\.count) == [20, 20, 6])
        #expect(chunks.joined().elementsEqual(Array((String(repeating: "x", count: 45) + "\n").utf8)))
    }

    @Test func splitsAtMTUMinusThree() {
        let chunks = textChunks(String(repeating: "y", count: 300), delimiter: "\r\n", mtu: 100)
        #expect(chunks.map(\.count) == [97, 97, 97, 11])
        #expect(chunks.last?.suffix(2) == [0x0D, 0x0A])
    }

    @Test func shortTextIsOneChunk() {
        #expect(textChunks("AT", mtu: 23) == [Array("AT\n".utf8)])
        #expect(textChunks("AT", delimiter: "", mtu: 23) == [Array("AT".utf8)])
    }

    @Test func emptyTextAndDelimiterIsNothingToWrite() {
        #expect(textChunks("", delimiter: "", mtu: nil) == [])
        #expect(textChunks("", mtu: nil) == [[0x0A]])
    }

    @Test func chunksFallBetweenCharacters() {
        // 19 ASCII bytes then "€" (3 bytes): the euro sign moves whole to the second chunk.
        let chunks = textChunks(String(repeating: "a", count: 19) + "€", mtu: nil)
        #expect(chunks.map(\.count) == [19, 4])
        #expect(chunks.allSatisfy { String(validating: $0, as: UTF8.self) != nil })
    }

    @Test func tinyMTUStillMakesProgress() {
        #expect(textChunks("ab", delimiter: "", mtu: 3) == [[0x61], [0x62]])
        #expect(textChunks("€", delimiter: "", mtu: 4) == [[0xE2], [0x82], [0xAC]])
    }
}
