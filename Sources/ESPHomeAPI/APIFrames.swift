/// ESPHome's native API frames (docs/dev/esphome-api.md): what arrives on a client's socket cut into messages, and
/// messages made into bytes, for both of its framings:
/// - plaintext: `0x00`, varint payload length, varint message type, payload;
/// - Noise: `0x01`, u16 big-endian length, frame; once the handshake is done the frame is encrypted and its
///   plaintext is `type (u16 BE) | length (u16 BE) | payload`.
/// The first byte a client sends chooses the framing. Every length is bounded before any byte of it is kept, so a
/// client announcing a huge message costs nothing; a malformed frame ends the connection.
struct APIFrameReader {
    enum Framing: Equatable { case plaintext, noise }

    enum Frame: Equatable {
        /// Plaintext: a whole message.
        case message(type: UInt32, payload: [UInt8])
        /// Noise: a frame's bytes (handshake or encrypted), for the Noise session to read.
        case noise([UInt8])
    }

    enum Failure: Error, Equatable {
        /// The first byte names no framing, or a later frame's marker differs from the first.
        case badMarker(UInt8)
        case tooLong(Int)
        case badVarint
    }

    /// The largest payload accepted (ESPHome's own bound for a plaintext message is a 16-bit length too).
    static let maxPayload = 65_535

    private(set) var framing: Framing?
    private var buffer: [UInt8] = []
    private var start = 0
    private var failed: Failure?

    /// The bytes a client sent, as many whole frames as they complete; the rest waits for more bytes.
    mutating func read(_ bytes: some Collection<UInt8>) throws(Failure) -> [Frame] {
        if let failed { throw failed }
        buffer.append(contentsOf: bytes)
        var frames: [Frame] = []
        while true {
            let result: Frame?
            do throws(Failure) {
                result = try next()
            } catch {
                failed = error
                buffer = []
                start = 0
                throw error
            }
            guard let frame = result else { break }
            frames.append(frame)
        }
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        return frames
    }

    /// Bytes held for an incomplete frame.
    var pending: Int { buffer.count - start }

    private mutating func next() throws(Failure) -> Frame? {
        guard start < buffer.count else { return nil }
        let marker = buffer[start]
        let framing: Framing
        switch marker {
        case 0x00: framing = .plaintext
        case 0x01: framing = .noise
        default: throw .badMarker(marker)
        }
        if let chosen = self.framing, chosen != framing { throw .badMarker(marker) }
        self.framing = framing
        var index = start + 1
        switch framing {
        case .noise:
            guard buffer.count - index >= 2 else { return nil }
            let length = Int(buffer[index]) << 8 | Int(buffer[index + 1])
            index += 2
            guard buffer.count - index >= length else { return nil }
            let frame = Array(buffer[index..<(index + length)])
            start = index + length
            return .noise(frame)
        case .plaintext:
            guard let length = try varint(&index) else { return nil }
            guard length <= UInt64(Self.maxPayload) else { throw .tooLong(Int(clamping: length)) }
            guard let type = try varint(&index) else { return nil }
            guard type <= UInt64(UInt32.max) else { throw .badVarint }
            guard buffer.count - index >= Int(length) else { return nil }
            let payload = Array(buffer[index..<(index + Int(length))])
            start = index + Int(length)
            return .message(type: UInt32(type), payload: payload)
        }
    }

    /// nil: not all of it has arrived. At most 10 bytes (a u64); more is malformed.
    private func varint(_ index: inout Int) throws(Failure) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var at = index
        while at < buffer.count {
            let byte = buffer[at]
            guard shift < 64 else { throw .badVarint }
            value |= UInt64(byte & 0x7F) << shift
            at += 1
            if byte & 0x80 == 0 {
                index = at
                return value
            }
            shift += 7
        }
        guard at - index <= 10 else { throw .badVarint }
        return nil
    }
}

/// Messages and frames as bytes.
enum APIFrameWriter {
    static func plaintext(type: UInt32, _ payload: [UInt8]) -> [UInt8] {
        [0x00] + varint(UInt64(payload.count)) + varint(UInt64(type)) + payload
    }

    /// A Noise frame around `frame` (at most 65,535 bytes).
    static func noise(_ frame: [UInt8]) -> [UInt8] {
        precondition(frame.count <= 0xFFFF, "a Noise frame holds at most 65535 bytes")
        return [0x01, UInt8(frame.count >> 8), UInt8(frame.count & 0xFF)] + frame
    }

    /// The plaintext of an encrypted message: type and length (u16 big-endian each), payload.
    static func noisePlaintext(type: UInt32, _ payload: [UInt8]) -> [UInt8] {
        [UInt8(type >> 8 & 0xFF), UInt8(type & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF)]
            + payload
    }

    /// An encrypted message's plaintext split; nil when it is shorter than its header says.
    static func parseNoisePlaintext(_ bytes: [UInt8]) -> (type: UInt32, payload: [UInt8])? {
        guard bytes.count >= 4 else { return nil }
        let type = UInt32(bytes[0]) << 8 | UInt32(bytes[1])
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard bytes.count - 4 >= length else { return nil }
        return (type, Array(bytes[4..<(4 + length)]))
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            out.append(byte)
        } while value != 0
        return out
    }
}
