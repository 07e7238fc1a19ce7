import Codecs
import FuzzSupport

/// Every codec in both directions, text framing and chunking, and the JSON reader/writer.
///
/// Input: selector byte, then a piece used as characteristic bytes / payload text, then the rest for framing.
/// Oracles: decode → encode gives the same bytes back (or, for lossy codecs, the same payload back); an accepted
/// payload encodes to a canonical form that survives another decode → encode; framing and chunking lose no bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodecs(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let selector = input.byte()
    let piece = input.chunk()
    let rest = input.rest()

    for kind in CodecKind.allCases {
        guard let codec = try? Codec(kind) else { fatalError("codec \(kind) without values map must build") }
        checkDecode(codec, piece)
        if kind.canEncode {
            checkEncode(codec, String(decoding: piece, as: UTF8.self))
        }
    }
    checkHeartRate(piece)
    checkJSON(String(decoding: piece + rest, as: UTF8.self))
    checkFraming(selector: selector, piece: piece, rest: rest)
    checkChunks(String(decoding: piece, as: UTF8.self), mtu: Int(selector))
    return 0
}

/// Characteristic bytes → payload → bytes.
private func checkDecode(_ codec: Codec, _ bytes: [UInt8]) {
    guard let payload = try? codec.decode(bytes) else { return }
    guard codec.canEncode else { return }
    let again: [UInt8]
    do {
        again = try codec.encode(payload)
    } catch {
        fatalError("\(codec.kind): decoded payload \(payload.debugDescription) of \(bytes) does not encode: \(error)")
    }
    switch codec.kind {
    case .text:
        if String(validating: bytes, as: UTF8.self) != nil {
            require(again == bytes, "text round trip of \(bytes) gave \(again)")
        }
    case .bool:
        require(again == [bytes.contains(where: { $0 != 0 }) ? 1 : 0], "bool \(bytes) → \(payload) → \(again)")
    case .float32, .float32be, .float64, .float64be:
        if payload != "nan" {
            require(again == bytes, "\(codec.kind) \(bytes) → \(payload) → \(again)")
        }
    default:
        require(again == bytes, "\(codec.kind) \(bytes) → \(payload) → \(again)")
    }
}

/// MQTT payload → bytes → payload → bytes: an accepted payload's bytes are a fixed point.
private func checkEncode(_ codec: Codec, _ payload: String) {
    guard let bytes = try? codec.encode(payload) else { return }
    let decoded: String
    do {
        decoded = try codec.decode(bytes)
    } catch {
        fatalError("\(codec.kind): \(payload.debugDescription) encoded to \(bytes), which does not decode: \(error)")
    }
    if codec.kind == .text {
        require(decoded == payload, "text \(payload.debugDescription) → \(bytes) → \(decoded.debugDescription)")
        return
    }
    guard let again = try? codec.encode(decoded) else {
        fatalError("\(codec.kind): \(payload.debugDescription) → \(bytes) → \(decoded.debugDescription) does not encode")
    }
    if !(decoded == "nan") {
        require(again == bytes, "\(codec.kind): \(payload.debugDescription) → \(bytes) → \(decoded) → \(again)")
    }
}

private func checkHeartRate(_ bytes: [UInt8]) {
    guard let measurement = try? HeartRateMeasurement(bytes) else { return }
    roundTripJSON(measurement.json, what: "heart rate of \(bytes)")
}

private func checkJSON(_ text: String) {
    guard let value = try? JSONValue.parse(text) else { return }
    roundTripJSON(value, what: "JSON \(text.debugDescription)")
}

/// What the writer prints, the parser reads back to the same document (compared as text: 1000.0 prints as 1000
/// and reads back as an integer, which is the same JSON number).
private func roundTripJSON(_ value: JSONValue, what: String) {
    let text = value.serialized
    guard let parsed = try? JSONValue.parse(text) else {
        fatalError("\(what): serialized \(text.debugDescription) does not parse")
    }
    require(parsed.serialized == text, "\(what): \(text) re-serialized as \(parsed.serialized)")
}

/// Chunks (cut from `rest` at lengths taken from `piece`) → lines. With valid UTF-8, the lines plus the pending
/// flush, joined, are the input without its delimiters: framing never loses or invents bytes.
private func checkFraming(selector: UInt8, piece: [UInt8], rest: [UInt8]) {
    let delimiters = ["\n", ";", "", "\r\n", "END"]
    let delimiter = delimiters[Int(selector & 0x07) % delimiters.count]
    let maxLine = 4 + Int(selector >> 3)
    var framer = TextFramer(delimiter: delimiter, maxLine: maxLine)
    var lines: [String] = []
    var offset = 0
    var cut = 0
    while offset < rest.count {
        let length = piece.isEmpty ? rest.count : max(1, Int(piece[cut % piece.count]))
        cut += 1
        let end = min(rest.count, offset + length)
        lines += framer.append(Array(rest[offset..<end]))
        offset = end
    }
    if let pending = framer.flush() { lines.append(pending) }
    for line in lines {
        require(!line.isEmpty, "framer produced an empty line")
    }
    // The oracle only where the expected output is unambiguous: single-byte delimiters, no "\r" for "\n" (which
    // also swallows a preceding "\r"), and unframed input whose chunks are each valid UTF-8.
    guard let text = String(validating: rest, as: UTF8.self), delimiter.utf8.count <= 1 else { return }
    if delimiter == "\n" && text.utf8.contains(0x0D) { return }
    if delimiter.isEmpty {
        return  // chunk edges may split characters; each chunk is decoded on its own, by design
    }
    let expected = text.utf8.split(separator: delimiter.utf8.first!, omittingEmptySubsequences: true)
        .flatMap { $0 }
    let joined = lines.flatMap { Array($0.utf8) }
    require(joined == Array(expected), "framing \(rest) with \(delimiter.debugDescription) max \(maxLine) gave \(lines)")
    for line in lines {
        require(!line.utf8.contains(delimiter.utf8.first!), "line \(line.debugDescription) still holds its delimiter")
    }
}

/// Outgoing text: chunks fit MTU − 3 and concatenate to the text plus its delimiter.
private func checkChunks(_ text: String, mtu: Int) {
    let chunks = textChunks(text, delimiter: "\n", mtu: mtu == 0 ? nil : mtu)
    let size = mtu == 0 ? 20 : max(1, mtu - 3)
    for chunk in chunks {
        require(!chunk.isEmpty && chunk.count <= size, "chunk of \(chunk.count) bytes for MTU \(mtu)")
    }
    require(chunks.flatMap { $0 } == Array(text.utf8) + [0x0A], "chunks of \(text.debugDescription) lose bytes")
}

@_cdecl("FuzzCodecs_main")
public func fuzzCodecsMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzCodecs(data, size) })
}
