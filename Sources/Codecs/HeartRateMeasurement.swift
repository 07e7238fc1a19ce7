/// The Heart Rate Measurement characteristic (0x2A37), parsed according to its flags byte.
public struct HeartRateMeasurement: Sendable, Equatable {
    public var bpm: Int
    /// nil when the sensor does not support contact detection in this connection.
    public var contact: Bool?
    public var energyKJ: Int?
    /// RR intervals in milliseconds (the wire unit is 1/1024 s).
    public var rrMS: [Double]

    /// - Throws: `CodecError` for an empty, truncated or over-long value.
    public init(_ bytes: [UInt8]) throws(CodecError) {
        guard let flags = bytes.first else { throw CodecError("heart rate measurement is empty") }
        var reader = Reader(bytes: bytes, offset: 1)
        if flags & 0x01 != 0 {
            bpm = Int(try reader.uint16(field: "16-bit heart rate"))
        } else {
            bpm = Int(try reader.uint8(field: "heart rate"))
        }
        // Bit 2: contact detection supported; bit 1 is only meaningful when it is.
        contact = flags & 0x04 != 0 ? flags & 0x02 != 0 : nil
        energyKJ = flags & 0x08 != 0 ? Int(try reader.uint16(field: "energy expended")) : nil
        rrMS = []
        if flags & 0x10 != 0 {
            guard reader.remaining % 2 == 0 else {
                throw CodecError("heart rate measurement has a truncated RR interval (\(reader.remaining) bytes left)")
            }
            while reader.remaining > 0 {
                rrMS.append(Double(try reader.uint16(field: "RR interval")) * 1000 / 1024)
            }
        }
        guard reader.remaining == 0 else {
            throw CodecError("heart rate measurement has \(reader.remaining) unexpected trailing byte(s)")
        }
    }

    /// `{"bpm":…,"contact":…,"energy_kj":…,"rr_ms":[…]}` in exactly this key order (docs/configuration.md#codecs).
    public var json: JSONValue {
        .object([
            ("bpm", .int(bpm)),
            ("contact", contact.map(JSONValue.bool) ?? .null),
            ("energy_kj", energyKJ.map(JSONValue.int) ?? .null),
            ("rr_ms", .array(rrMS.map(JSONValue.double))),
        ])
    }

    /// Reads the fields in order from the array `init` gets or the bytes `writeJSON` is lent.
    fileprivate struct Reader<Bytes: RandomAccessCollection> where Bytes.Element == UInt8, Bytes.Index == Int {
        let bytes: Bytes
        var offset: Int

        var remaining: Int { bytes.count - offset }

        mutating func uint8(field: StaticString) throws(CodecError) -> UInt8 {
            guard remaining >= 1 else { throw CodecError("heart rate measurement is truncated: missing \(field)") }
            defer { offset += 1 }
            return bytes[bytes.startIndex + offset]
        }

        mutating func uint16(field: StaticString) throws(CodecError) -> UInt16 {
            guard remaining >= 2 else { throw CodecError("heart rate measurement is truncated: missing \(field)") }
            defer { offset += 2 }
            let at = bytes.startIndex + offset
            return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
        }
    }
}

extension HeartRateMeasurement {
    /// `json`'s text, written straight from the characteristic's bytes into `out`: no measurement, no array of RR
    /// intervals and no `JSONValue` tree per notification (issue 45: building and serialising the tree was most of a
    /// decoded value's instructions). The checks are `init`'s, in the same order, so a value is refused with the same
    /// error; nothing is written before they have passed.
    static func writeJSON(_ bytes: UnsafeRawBufferPointer, to out: inout UTF8Buffer) throws(CodecError) {
        guard let flags = bytes.first else { throw CodecError("heart rate measurement is empty") }
        var reader = Reader(bytes: bytes, offset: 1)
        let bpm = try flags & 0x01 != 0
            ? reader.uint16(field: "16-bit heart rate") : UInt16(reader.uint8(field: "heart rate"))
        let energy: UInt16? = try flags & 0x08 != 0 ? reader.uint16(field: "energy expended") : nil
        let hasIntervals = flags & 0x10 != 0
        if hasIntervals, reader.remaining % 2 != 0 {
            throw CodecError("heart rate measurement has a truncated RR interval (\(reader.remaining) bytes left)")
        }
        if !hasIntervals, reader.remaining != 0 {
            throw CodecError("heart rate measurement has \(reader.remaining) unexpected trailing byte(s)")
        }
        // The longest spelling: 58 bytes around the intervals, 14 for each ("63999.0234375,").
        let intervals = hasIntervals ? reader.remaining / 2 : 0
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64 + 14 * intervals) { buffer in
            var text = UTF8Cursor(buffer.baseAddress!)
            text.put("{\"bpm\":")
            text.put(decimal: UInt64(bpm))
            text.put(",\"contact\":")
            // Bit 2: contact detection supported; bit 1 is only meaningful when it is.
            text.put(flags & 0x04 == 0 ? "null" : flags & 0x02 != 0 ? "true" : "false")
            text.put(",\"energy_kj\":")
            if let energy { text.put(decimal: UInt64(energy)) } else { text.put("null") }
            text.put(",\"rr_ms\":[")
            for index in 0..<intervals {
                if index > 0 { text.put(UInt8(ascii: ",")) }
                let interval = (try? reader.uint16(field: "RR interval")) ?? 0   // cannot fail: an even count is left
                writeMilliseconds(interval, to: &text)
            }
            text.put("]}")
            out.append(contentsOf: text.written)
        }
    }

    /// An RR interval of `units` × 1/1024 s in milliseconds, as `NumberFormatting` spells the double `units × 1000 /
    /// 1024`, without its search: the value is exactly `units × 9,765,625 / 10⁷` (1000/1024 = 125/128), at most 12
    /// significant digits, and no decimal with fewer places reads back to it (two such decimals differ by at least
    /// 10⁻⁷, millions of times the double's precision below 65,536), so the shortest spelling is those digits with the
    /// fraction's trailing zeros dropped — and the integer alone when there is no fraction.
    private static func writeMilliseconds(_ units: UInt16, to out: inout UTF8Cursor) {
        let scaled = UInt64(units) &* 9_765_625
        out.put(decimal: scaled / 10_000_000)
        var fraction = scaled % 10_000_000
        guard fraction != 0 else { return }
        var places = 7
        while fraction % 10 == 0 {
            fraction /= 10
            places &-= 1
        }
        out.put(UInt8(ascii: "."))
        out.put(decimal: fraction, minimumDigits: places)
    }
}
