import Codecs
import Testing
@testable import BridgeHomeAssistant

@Suite struct OnOffPayloadsTests {
    @Test(arguments: [
        ([("ON", "01"), ("OFF", "00")], "ON", "OFF"),
        ([("off", "00"), ("on", "01")], "on", "off"),
        ([("closed", "0"), ("open", "1")], "open", "closed"),
        ([("Dark", "0"), ("Disabled", "1")], "Dark", "Disabled"),     // only the off word is known
        ([("bright", "1"), ("dim", "0")], "bright", "dim"),           // neither known: first is on
        ([("TOGGLE", "02"), ("OFF", "00"), ("ON", "01")], "ON", "OFF"),
    ])
    func fromValues(values: [(String, String)], on: String, off: String) {
        let payloads = OnOffPayloads.fromValues(values.map { (key: $0.0, value: $0.1) })
        #expect(payloads == OnOffPayloads(on: on, off: off))
    }

    @Test func noPairWithoutTwoEntriesOrKnownWords() {
        #expect(OnOffPayloads.fromValues([]) == nil)
        #expect(OnOffPayloads.fromValues([(key: "ON", value: "1")]) == nil)
        #expect(OnOffPayloads.fromValues([(key: "A", value: "1"), (key: "B", value: "2"), (key: "C", value: "3")]) == nil)
    }

    @Test func rawPayloadsFollowTheCodec() throws {
        // What each codec publishes for the single bytes 0x01 and 0x00.
        for kind in [CodecKind.bool, .hex, .base64, .uint8, .int8] {
            let raw = OnOffPayloads.raw(kind)
            let codec = try Codec(kind)
            #expect(try codec.decode([1]) == raw.on, "\(kind)")
            #expect(try codec.decode([0]) == raw.off, "\(kind)")
        }
        #expect(OnOffPayloads.forChannel(values: [], kind: .text) == OnOffPayloads(on: "ON", off: "OFF"))
    }
}
