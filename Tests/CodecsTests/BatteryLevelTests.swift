import Testing
@testable import Codecs

@Suite struct BatteryLevelTests {
    let codec = try! Codec(.batteryLevel)

    @Test(arguments: [0, 1, 57, 100] as [UInt8])
    func decodesPercent(level: UInt8) throws {
        #expect(try codec.decode([level]) == String(level))
    }

    @Test func overHundredIsAnError() {
        #expect(throws: CodecError("battery level 101 is over 100%")) { try codec.decode([101]) }
        #expect(throws: CodecError.self) { try codec.decode([255]) }
    }

    @Test func needsExactlyOneByte() {
        #expect(throws: CodecError.self) { try codec.decode([]) }
        #expect(throws: CodecError.self) { try codec.decode([50, 0]) }
    }

    @Test func isDecodeOnly() {
        #expect(!codec.canEncode)
        #expect(throws: CodecError.self) { try codec.encode("50") }
    }
}
