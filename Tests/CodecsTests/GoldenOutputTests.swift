import Glibc
import Testing
@testable import Codecs

/// Every codec's output over a fixed body of inputs, compared with Tests/golden/codecs.txt: the file was written by the
/// String-building writer before payloads were written as bytes (issue 45), so the byte writer is held to the old
/// output byte for byte. `GATTBRIDGE_WRITE_GOLDEN=1 swift test --filter GoldenOutputTests` writes it again, which is
/// only right when an output is meant to change.
@Suite struct GoldenOutputTests {
    static let repoRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)   // Tests/CodecsTests/<file>
        return parts.joined(separator: "/")
    }()
    static let goldenPath = repoRoot + "/Tests/golden/codecs.txt"

    @Test func everyCodecMatchesTheGoldenFile() throws {
        let lines = GoldenInputs.lines()
        let text = lines.joined(separator: "\n") + "\n"
        if getenv("GATTBRIDGE_WRITE_GOLDEN") != nil {
            try #require(FileBytes.write(Array(text.utf8), to: Self.goldenPath))
            return
        }
        let golden = try #require(FileBytes.read(Self.goldenPath), "no golden file at \(Self.goldenPath)")
        let expected = String(decoding: golden, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(expected.count == lines.count)
        var mismatches = 0
        for (index, line) in lines.enumerated() where index < expected.count && expected[index] != line {
            mismatches += 1
            if mismatches <= 10 { Issue.record("line \(index + 1): expected \(expected[index]), got \(line)") }
        }
        #expect(mismatches == 0)
    }
}

/// The inputs: the fuzz seeds of FuzzCodecs (the piece the fuzz target cuts from each, which it feeds every codec)
/// and of FuzzCodecs' regressions and FuzzBridgeRequest (whole, as JSON text), the bench strap's heart-rate sequence,
/// generated numbers that exercise the decimal spelling (plain decimals, integral values, arbitrary bit patterns), and
/// every escape of the JSON string writer. One line per input, every codec's outcome on it in `CodecKind.allCases`
/// order; an outcome longer than 24 bytes is written as its length and FNV-1a hash, so the file stays small.
enum GoldenInputs {
    static func lines() -> [String] {
        var out: [String] = ["# codecs: " + CodecKind.allCases.map(\.rawValue).joined(separator: " ")]
        for (name, bytes) in seeds() {
            out.append("# \(name)")
            if name.contains("FuzzCodecs/") {
                var input = bytes.dropFirst(1)
                let length = Int(input.popFirst() ?? 0)
                let piece = Array(input.prefix(length))
                out.append(token(piece) + " " + CodecKind.allCases.map { kind in
                    outcome { try lentDecode(kind, piece) }
                }.joined(separator: " "))
                out.append("heart-rate-json " + outcome { try HeartRateMeasurement(piece).json.serialized })
            }
            out.append("json " + outcome { try JSONValue.parse(String(decoding: bytes, as: UTF8.self)).serialized })
        }
        out.append("# heart rate strap (bench/peripherals/heart_rate.py SEQUENCE) and the bench's heart-rate stamps")
        for bytes in heartRateStrap {
            out.append("heart_rate_measurement \(token(bytes)) " + outcome { try Codec(.heartRateMeasurement).decode(bytes) }
                       + " " + outcome { try lentDecode(.heartRateMeasurement, bytes) })
        }
        out.append("# numbers: float64 float32 int32 uint32 json-array(value, -value)")
        for bytes in numberPatterns() {
            var line = token(bytes)
            for kind in bytes.count == 8 ? [CodecKind.float64, .float64be] : [.float32, .float32be, .int32, .uint32] {
                line += " " + outcome { try lentDecode(kind, bytes) }
            }
            if bytes.count == 8 {
                let value = Double(bitPattern: bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
                line += " " + outcome { JSONValue.array([.double(value), .double(-value)]).serialized }
            }
            out.append(line)
        }
        out.append("# strings")
        for scalar in 0..<0x3000 {
            guard let value = Unicode.Scalar(scalar), scalar < 0x300 || (0x2020...0x2030).contains(scalar) else { continue }
            let json = JSONValue.object([("k\(Character(value))", .string("a\(Character(value))b"))])
            out.append("json-string \(scalar) " + outcome { json.serialized })
        }
        return out
    }

    static func lentDecode(_ kind: CodecKind, _ bytes: [UInt8]) throws -> String {
        let codec = try Codec(kind)
        return try bytes.withUnsafeBytes { try codec.decode($0) }
    }

    /// `=` and the output, or `!` and a hash of the error's message.
    static func outcome(_ body: () throws -> String) -> String {
        do {
            return "=" + token(Array(try body().utf8))
        } catch {
            return "!" + String(UInt32(truncatingIfNeeded: fnv1a(Array("\(error)".utf8)) >> 16), radix: 16)
        }
    }

    /// Printable ASCII as it is (a backslash doubled), other bytes (and `#`) as `\xNN`; past 24 bytes,
    /// `#<length>:<FNV-1a>`.
    static func token(_ bytes: [UInt8]) -> String {
        if bytes.count > 24 {
            return "#\(bytes.count):" + String(fnv1a(bytes), radix: 16)
        }
        var text = ""
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"): text += "\\\\"
            case 0x21...0x7E where byte != UInt8(ascii: "#"): text.unicodeScalars.append(Unicode.Scalar(byte))
            default: text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text
    }

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    static let heartRateStrap: [[UInt8]] = [
        [0x00, 0x48], [0x06, 0x4B], [0x04, 0x50], [0x01, 0x2C, 0x01], [0x0E, 0x5A, 0xD2, 0x04],
        [0x16, 0x58, 0x40, 0x03], [0x1F, 0x82, 0x00, 0xF4, 0x01, 0x00, 0x02, 0x00, 0x04, 0xBC, 0x02], [0x02, 0x3C],
        [0x10, 0x48, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00], [0x19, 0xFF, 0xFF, 0xFF, 0xFF, 0x33, 0x03],
        [0x10, 0x3C, 0x07, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x1A, 0xF2, 0x6A, 0x40, 0x7C, 0x3A, 0xEE, 0x18],
    ]

    static func numberPatterns() -> [[UInt8]] {
        var patterns: [[UInt8]] = []
        func add(_ value: Double) { patterns.append(withUnsafeBytes(of: value.bitPattern.littleEndian, Array.init)) }
        func add(_ value: Float) { patterns.append(withUnsafeBytes(of: value.bitPattern.littleEndian, Array.init)) }
        for k in stride(from: 0, to: 65536, by: 331) {
            add(Double(k) * 1000 / 1024)
            add(Double(k) / 1000 - 20)
            add(Float(k) / 100 - 300)
        }
        for exponent in -20...20 {
            add(1.5 * pow(10, Double(exponent)))
            add(Double(1 << 20) * pow(10, Double(exponent)))
            add(Float(1.25) * Float(pow(10, Double(exponent))))
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<600 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            patterns.append(withUnsafeBytes(of: state, Array.init))
            patterns.append(withUnsafeBytes(of: UInt32(truncatingIfNeeded: state >> 17), Array.init))
        }
        return patterns
    }

    static func seeds() -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        for directory in ["Fuzz/Corpus/FuzzCodecs", "Fuzz/Regressions/FuzzCodecs", "Fuzz/Corpus/FuzzBridgeRequest"] {
            for name in FileBytes.list(GoldenOutputTests.repoRoot + "/" + directory).sorted() {
                guard let bytes = FileBytes.read(GoldenOutputTests.repoRoot + "/\(directory)/\(name)") else { continue }
                out.append(("\(directory)/\(name)", bytes))
            }
        }
        return out
    }
}

/// Whole files in and out, without Foundation.
enum FileBytes {
    static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[..<count]
            if count < chunk.count { return bytes }
        }
    }

    static func write(_ bytes: [UInt8], to path: String) -> Bool {
        guard let file = fopen(path, "wb") else { return false }
        defer { fclose(file) }
        return fwrite(bytes, 1, bytes.count, file) == bytes.count
    }

    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names
    }
}

/// The notification path's way: one buffer for every value, emptied in between (`ChannelPublisher`).
@Suite struct ReusedBufferTests {
    @Test func aReusedBufferHoldsEachValueAlone() throws {
        var buffer = UTF8Buffer()
        for kind in CodecKind.allCases {
            let codec = try Codec(kind)
            for bytes in GoldenInputs.heartRateStrap + GoldenInputs.numberPatterns().prefix(200) {
                let expected = try? codec.decode(bytes)
                buffer.removeAll()
                let written: Bool = bytes.withUnsafeBytes { raw in
                    do throws(CodecError) { try codec.decode(raw, into: &buffer); return true } catch { return false }
                }
                #expect(written == (expected != nil), "\(kind) \(bytes)")
                if written { #expect(buffer.string == expected, "\(kind) \(bytes)") }
            }
        }
    }

    @Test func mappedValuesAreWrittenAsTheirKeys() throws {
        let codec = try Codec(.uint8, values: [(key: "HIGH", value: "200")])
        var buffer = UTF8Buffer()
        let written: Bool = [UInt8(200)].withUnsafeBytes { raw in
            do throws(CodecError) { try codec.decode(raw, into: &buffer); return true } catch { return false }
        }
        #expect(written && buffer.string == "HIGH")
    }
}

/// The heart-rate writer spells RR intervals itself; every one of the 65,536 must read as the shortest-digits path
/// (`NumberFormatting`) spells the same double.
@Suite struct HeartRateIntervalTests {
    @Test func everyIntervalIsSpelledAsTheDoubleIs() throws {
        var mismatches = 0
        for units in 0...Int(UInt16.max) {
            let bytes: [UInt8] = [0x10, 60, UInt8(units & 0xFF), UInt8(units >> 8)]
            let json = try Codec(.heartRateMeasurement).decode(bytes)
            let expected = JSONValue.array([.double(Double(units) * 1000 / 1024)]).serialized
            if !json.hasSuffix("\"rr_ms\":\(expected)}") {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(units): \(json), expected rr_ms \(expected)") }
            }
        }
        #expect(mismatches == 0)
    }
}
