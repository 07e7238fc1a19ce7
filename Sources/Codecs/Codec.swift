/// A configured codec: a `CodecKind` plus the channel's optional `values` map (docs/configuration.md#codecs).
///
/// The map is checked once, at construction, so a config with a value the codec cannot encode is rejected
/// at load time instead of on the first command.
public struct Codec: Sendable, Equatable {
    public let kind: CodecKind
    /// The `values` map in config order: payload key → mapped value, the latter in this codec's payload format.
    public let values: [(key: String, value: String)]
    /// The bytes of each mapped value, parallel to `values`.
    private let mappedBytes: [[UInt8]]

    /// - Throws: `CodecError` when a mapped value does not encode with `kind` (including any value for a
    ///   decode-only codec).
    public init(_ kind: CodecKind, values: [(key: String, value: String)] = []) throws(CodecError) {
        self.kind = kind
        self.values = values
        var mapped: [[UInt8]] = []
        for entry in values {
            guard kind.canEncode else {
                throw CodecError("codec \(kind) cannot encode, so it cannot have a values map")
            }
            do throws(CodecError) {
                mapped.append(try Self.encodeRaw(kind, entry.value))
            } catch {
                throw CodecError("value \"\(entry.value)\" for \"\(entry.key)\" is not valid for codec \(kind): \(error.message)")
            }
        }
        mappedBytes = mapped
    }

    public var canEncode: Bool { kind.canEncode }

    /// Bytes equal to a mapped value become its key; anything else goes through the codec.
    public func decode(_ bytes: [UInt8]) throws(CodecError) -> String {
        var out = UTF8Buffer()
        var failure: CodecError?
        bytes.withUnsafeBytes { raw in
            do throws(CodecError) { try decode(raw, into: &out) } catch { failure = error }
        }
        if let failure { throw failure }
        return out.string
    }

    /// `decode` of bytes the caller only lends (a notification as it was read: the notify socket's buffer, libdbus's
    /// message), so the hot path makes no byte array per value.
    public func decode(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> String {
        var out = UTF8Buffer()
        try decode(bytes, into: &out)
        return out.string
    }

    /// `decode`'s text as UTF-8, appended to `out`, which the caller keeps from value to value and publishes as bytes
    /// (`ChannelPublisher`): no `String` per value (issue 45). On an error `out` may hold part of a payload.
    public func decode(_ bytes: UnsafeRawBufferPointer, into out: inout UTF8Buffer) throws(CodecError) {
        if !mappedBytes.isEmpty, let index = mappedBytes.firstIndex(where: { $0.elementsEqual(bytes) }) {
            out.append(contentsOf: values[index].key.utf8)
            return
        }
        try Self.decodeRaw(kind, bytes, into: &out)
    }

    /// A payload that is a key of the map is written as its mapped value; anything else goes through the codec.
    public func encode(_ payload: String) throws(CodecError) -> [UInt8] {
        if let index = values.firstIndex(where: { $0.key == payload }) {
            return mappedBytes[index]
        }
        return try Self.encodeRaw(kind, payload)
    }

    /// For `text` channels, whose lines come from a `TextFramer` rather than `decode`: a line equal to a
    /// mapped value is published as its key.
    public func mapLine(_ line: String) -> String {
        values.first(where: { $0.value == line })?.key ?? line
    }

    /// For `text` channels, whose commands go through `textChunks` rather than `encode`: a key of the map
    /// is replaced by its mapped value.
    public func mapCommand(_ payload: String) -> String {
        values.first(where: { $0.key == payload })?.value ?? payload
    }

    public static func == (lhs: Codec, rhs: Codec) -> Bool {
        lhs.kind == rhs.kind && lhs.values.elementsEqual(rhs.values, by: { $0.key == $1.key && $0.value == $1.value })
    }

    static func decodeRaw(_ kind: CodecKind, _ bytes: UnsafeRawBufferPointer, into out: inout UTF8Buffer) throws(CodecError) {
        switch kind {
        case .hex: Hex.encode(bytes, to: &out)
        case .base64: Base64.encode(bytes, to: &out)
        // Invalid UTF-8 becomes U+FFFD, as it always has; a text channel's notifications go through its framer instead.
        case .text: out.append(utf8Repaired: bytes)
        case .uint8: try IntegerCoding.decode(bytes, as: UInt8.self, kind: kind, to: &out)
        case .int8: try IntegerCoding.decode(bytes, as: Int8.self, kind: kind, to: &out)
        case .uint16, .uint16be: try IntegerCoding.decode(bytes, as: UInt16.self, kind: kind, to: &out)
        case .int16, .int16be: try IntegerCoding.decode(bytes, as: Int16.self, kind: kind, to: &out)
        case .uint32, .uint32be: try IntegerCoding.decode(bytes, as: UInt32.self, kind: kind, to: &out)
        case .int32, .int32be: try IntegerCoding.decode(bytes, as: Int32.self, kind: kind, to: &out)
        case .float32, .float32be: try FloatCoding.decodeFloat(bytes, kind: kind, to: &out)
        case .float64, .float64be: try FloatCoding.decodeDouble(bytes, kind: kind, to: &out)
        case .bool: try BoolCoding.decode(bytes, to: &out)
        case .batteryLevel: try BatteryLevel.decode(bytes, to: &out)
        case .heartRateMeasurement: try HeartRateMeasurement.writeJSON(bytes, to: &out)
        }
    }

    static func encodeRaw(_ kind: CodecKind, _ payload: String) throws(CodecError) -> [UInt8] {
        switch kind {
        case .hex: return try Hex.decode(payload)
        case .base64: return try Base64.decode(payload)
        case .text: return Array(payload.utf8)
        case .uint8: return try IntegerCoding.encode(payload, as: UInt8.self, kind: kind)
        case .int8: return try IntegerCoding.encode(payload, as: Int8.self, kind: kind)
        case .uint16, .uint16be: return try IntegerCoding.encode(payload, as: UInt16.self, kind: kind)
        case .int16, .int16be: return try IntegerCoding.encode(payload, as: Int16.self, kind: kind)
        case .uint32, .uint32be: return try IntegerCoding.encode(payload, as: UInt32.self, kind: kind)
        case .int32, .int32be: return try IntegerCoding.encode(payload, as: Int32.self, kind: kind)
        case .float32, .float32be: return try FloatCoding.encodeFloat(payload, kind: kind)
        case .float64, .float64be: return try FloatCoding.encodeDouble(payload, kind: kind)
        case .bool: return try BoolCoding.encode(payload)
        case .batteryLevel, .heartRateMeasurement: throw CodecError("codec \(kind) is decode-only")
        }
    }
}
