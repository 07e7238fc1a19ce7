import Testing
@testable import Codecs

@Suite struct TextFramerTests {
    @Test func splitsLinesAcrossChunks() {
        var framer = TextFramer()
        #expect(framer.append(Array("hel".utf8)) == [])
        #expect(framer.hasPending)
        #expect(framer.append(Array("lo\nwor".utf8)) == ["hello"])
        #expect(framer.append(Array("ld\nx\ny\n".utf8)) == ["world", "x", "y"])
        #expect(!framer.hasPending)
        #expect(framer.flush() == nil)
    }

    @Test func defaultDelimiterAcceptsCRLFEvenWhenSplit() {
        var framer = TextFramer()
        #expect(framer.append(Array("OK\r".utf8)) == [])
        #expect(framer.append(Array("\nAT+X\r\n".utf8)) == ["OK", "AT+X"])
        #expect(framer.append(Array("a\rb\n".utf8)) == ["a\rb"])
    }

    @Test func configuredCRLFDelimiterSplitAcrossChunks() {
        var framer = TextFramer(delimiter: "\r\n")
        #expect(framer.append(Array("one\r".utf8)) == [])
        #expect(framer.append(Array("\ntwo\nstill two\r\n".utf8)) == ["one", "two\nstill two"])
    }

    @Test func multiByteDelimiterSplitInEveryPlace() {
        let stream = Array("alpha<END>beta<END>gamma".utf8)
        for split in 1..<stream.count {
            var framer = TextFramer(delimiter: "<END>")
            let lines = framer.append(Array(stream[..<split])) + framer.append(Array(stream[split...]))
            #expect(lines == ["alpha", "beta"], "split at \(split)")
            #expect(framer.flush() == "gamma")
        }
    }

    @Test func byteByByteDeliveryGivesTheSameLines() {
        var framer = TextFramer(delimiter: "\r\n")
        var lines: [String] = []
        for byte in Array("héllo\r\nwörld\r\n".utf8) { lines += framer.append([byte]) }
        #expect(lines == ["héllo", "wörld"])
    }

    @Test func emptyLinesAreSkipped() {
        var framer = TextFramer()
        #expect(framer.append(Array("\n\r\na\n\n".utf8)) == ["a"])
    }

    @Test func flushReturnsThePartialLineAsIs() {
        var framer = TextFramer()
        _ = framer.append(Array("partial\r".utf8))
        #expect(framer.flush() == "partial\r")
        #expect(!framer.hasPending)
        #expect(framer.flush() == nil)
        // The rest of a delimiter arriving after a flush does not produce an empty message.
        #expect(framer.append([0x0A]) == [])
    }

    @Test func longLinesArePublishedInPiecesOfMaxLine() {
        var framer = TextFramer(maxLine: 4)
        #expect(framer.append(Array("abcdefghij".utf8)) == ["abcd", "efgh"])
        #expect(framer.append(Array("k\n".utf8)) == ["ijk"])
        #expect(framer.append(Array("abcdefgh\n".utf8)) == ["abcd", "efgh"])
        #expect(framer.append(Array("abcd\n".utf8)) == ["abcd"])
    }

    @Test func aLineOfExactlyMaxLineIsNotCutBeforeItsDelimiter() {
        var framer = TextFramer(delimiter: "\r\n", maxLine: 4)
        #expect(framer.append(Array("abcd\r".utf8)) == [])
        #expect(framer.append(Array("\n".utf8)) == ["abcd"])
        var lf = TextFramer(maxLine: 4)
        #expect(lf.append(Array("abcd\r".utf8)) == [])
        #expect(lf.append(Array("\n".utf8)) == ["abcd"])
    }

    @Test func cutsDoNotSplitMultiByteCharacters() {
        var framer = TextFramer(maxLine: 4)
        // "aé€" = 61 C3A9 E282AC: a 4-byte cut would fall inside the euro sign.
        #expect(framer.append(Array("aé€b".utf8)) == ["aé"])
        #expect(framer.append(Array("cde\n".utf8)) == ["€b", "cde"])
        // A 4-byte character never fits a 3-byte piece; it is cut at max_line and marked with U+FFFD.
        var tiny = TextFramer(maxLine: 3)
        let lines = tiny.append(Array("😀\n".utf8))
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.contains("\u{FFFD}") })
    }

    @Test func invalidUTF8BecomesReplacementCharacter() {
        var framer = TextFramer()
        #expect(framer.append([0x61, 0xFF, 0x62, 0x0A]) == ["a\u{FFFD}b"])
        _ = framer.append([0x63, 0xE2, 0x82])
        #expect(framer.flush() == "c\u{FFFD}")
    }

    @Test func emptyDelimiterMakesEachChunkAMessage() {
        var framer = TextFramer(delimiter: "", maxLine: 5)
        #expect(framer.append(Array("hello\nworld!".utf8)) == ["hello", "\nworl", "d!"])
        #expect(!framer.hasPending)
        #expect(framer.append([]) == [])
    }
}
