import CMosquitto
import Testing
@testable import Config

@Suite struct TopicLevelTests {
    @Test(arguments: [
        ("chest-strap", "chest-strap"), ("a/b", "a_b"), ("a+b#c", "a_b_c"), ("$SYS", "SYS"), ("$$x$", "x$"),
        ("tab\there", "tab_here"), ("nul\u{0}", "nul_"), ("del\u{7F}", "del_"), ("c1\u{85}", "c1_"), ("héllo wörld", "héllo wörld"),
        ("", ""), ("$", ""), ("_$", "_$"),
    ])
    func sanitises(name: String, level: String) {
        #expect(sanitizeTopicLevel(name) == level)
    }

    /// The edges of what libmosquitto refuses: C0, DEL and C1 controls, the noncharacters, and their neighbours.
    /// (Given as numbers: Swift refuses noncharacters in `\u{…}` literals.) `_` is 0x5F.
    @Test(arguments: [
        ([0x1F, 0x20], [0x5F, 0x20]), ([0x7E, 0x7F], [0x7E, 0x5F]), ([0x9F, 0xA0], [0x5F, 0xA0]),
        ([0xFDCF, 0xFDD0, 0xFDEF, 0xFDF0], [0xFDCF, 0x5F, 0x5F, 0xFDF0]), ([0xFFFD, 0xFFFE, 0xFFFF], [0xFFFD, 0x5F, 0x5F]),
        ([0x1FFFD, 0x1FFFE, 0x1FFFF, 0x20000], [0x1FFFD, 0x5F, 0x5F, 0x20000]),
        ([0x10FFFD, 0x10FFFE, 0x10FFFF], [0x10FFFD, 0x5F, 0x5F]), ([0x64, 0x65, 0x76, 0xFFFF], [0x64, 0x65, 0x76, 0x5F]),
    ] as [([UInt32], [UInt32])])
    func sanitisesEdgeCodePoints(name: [UInt32], level: [UInt32]) {
        #expect(sanitizeTopicLevel(text(name)) == text(level))
    }

    /// The by-value test of what libmosquitto refuses matches the standard library's Unicode properties (general
    /// category Cc, noncharacter) on every scalar.
    @Test func refusedCodePointsMatchTheUnicodeProperties() {
        var mismatches: [UInt32] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let expected = scalar.properties.generalCategory == .control || scalar.properties.isNoncharacterCodePoint
            if isRefusedInTopics(scalar) != expected { mismatches.append(value) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10).map { String($0, radix: 16) })")
    }

    /// `base_topic` and `discovery_prefix` are used as written, so a noncharacter there is an error, not replaced.
    @Test func topicPrefixWithANoncharacterIsRefused() {
        // libyaml refuses a raw U+FFFF in the text, but a double-quoted escape produces one.
        let prefix = "home" + text([0xFFFF])
        #expect(issues("mqtt:\n  base_topic: \"home\\uFFFF\"\n") == [
            "config.yaml:2:15: base_topic in mqtt must be an MQTT topic without wildcards (+ #), control characters, "
                + "noncharacters, a leading $ or empty levels, got \"\(prefix)\"",
        ])
    }

    private func text(_ values: [UInt32]) -> String {
        var scalars = String.UnicodeScalarView()
        for value in values { scalars.append(Unicode.Scalar(value)!) }
        return String(scalars)
    }

    /// Every Unicode scalar, alone and between ordinary characters, comes out as a level that libmosquitto's own
    /// checks accept in a publish topic: the bridge builds every topic from such levels.
    @Test func everySanitisedLevelIsATopicLibmosquittoAccepts() {
        var refused: [String] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }   // surrogates: not in a Swift string
            let topic = "gattbridge/" + sanitizeTopicLevel("a\(Character(scalar))b") + "/x/set"
            let valid = topic.withCString { text in
                mosquitto_validate_utf8(text, Int32(strlen(text))) == Int32(MOSQ_ERR_SUCCESS.rawValue)
                    && mosquitto_pub_topic_check(text) == Int32(MOSQ_ERR_SUCCESS.rawValue)
            }
            if !valid { refused.append(String(value, radix: 16)) }
        }
        #expect(refused.isEmpty, "libmosquitto refuses the sanitised levels of U+\(refused.prefix(10))")
    }

    /// The complement: what the sanitiser keeps, libmosquitto does accept, so nothing is replaced needlessly.
    @Test func onlyWhatLibmosquittoRefusesIsReplaced() {
        var replaced: [String] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value), !"+#/$".unicodeScalars.contains(scalar) else { continue }
            let raw = "a\(Character(scalar))b"
            let acceptedRaw = raw.withCString { mosquitto_validate_utf8($0, Int32(strlen($0))) == Int32(MOSQ_ERR_SUCCESS.rawValue) }
            // NUL ends the C string early, so libmosquitto would see "a": it is refused by the sanitiser all the same.
            if acceptedRaw, value != 0, sanitizeTopicLevel(raw) != raw { replaced.append(String(value, radix: 16)) }
        }
        #expect(replaced.isEmpty, "replaced although libmosquitto accepts U+\(replaced.prefix(10))")
    }
}

#if canImport(Glibc)
import Glibc
#endif
