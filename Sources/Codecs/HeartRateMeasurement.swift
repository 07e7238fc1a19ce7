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
        // The longest spelling: 58 bytes around the intervals, 14 for each ("63999.0234375,"); an interval's fraction
        // is stored as eight bytes, one past its digits, which the margin of 6 takes.
        let intervals = hasIntervals ? reader.remaining / 2 : 0
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64 + 14 * intervals) { buffer in
            var text = UTF8Cursor(buffer.baseAddress!)
            text.put("{\"bpm\":")
            text.put(decimal: UInt32(bpm))
            text.put(",\"contact\":")
            // Bit 2: contact detection supported; bit 1 is only meaningful when it is.
            text.put(flags & 0x04 == 0 ? "null" : flags & 0x02 != 0 ? "true" : "false")
            text.put(",\"energy_kj\":")
            if let energy { text.put(decimal: UInt32(energy)) } else { text.put("null") }
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
    /// 1024`, without its search: the value is exactly `units × 125 / 128`, an integer part and a fraction `k / 128`
    /// (k < 128) of at most 7 decimal places, `k × 78,125 / 10⁷`; no decimal with fewer places reads back to it (two
    /// such decimals differ by at least 10⁻⁷, millions of times the double's precision below 65,536), so the shortest
    /// spelling is those digits with the fraction's trailing zeros dropped — and the integer alone when there is no
    /// fraction. `k = 2ᶻ × odd` gives `k × 78,125 = 10ᶻ × odd × 5⁷⁻ᶻ`: exactly z trailing zeros, so the fraction keeps
    /// 7 − z of its 7 digits, copied from `fractionDigits` (`HeartRateIntervalTests` checks all 65,536 intervals).
    @inline(__always)
    private static func writeMilliseconds(_ units: UInt16, to out: inout UTF8Cursor) {
        let scaled = UInt32(units) &* 125
        out.put(decimal: scaled >> 7)
        let fraction = Int(scaled & 127)
        guard fraction != 0 else { return }
        out.put(UInt8(ascii: "."))
        // Eight bytes in one store (the writer's buffer has room for them), of which the cursor keeps the digits.
        out.putEight(UnsafeRawPointer(Self.fractionDigits.utf8Start) + fraction &* 8, keeping: 7 &- fraction.trailingZeroBitCount)
    }

    /// `k × 78,125` in seven digits and a filler byte for k = 0 … 127 (eight bytes each): the decimal places of `k / 128`.
    private static let fractionDigits: StaticString = """
        0000000000781250015625000234375003125000039062500468750005468750062500000703125007812500085937500937500010156250\
        1093750011718750125000001328125014062500148437501562500016406250171875001796875018750000195312502031250021093750\
        2187500022656250234375002421875025000000257812502656250027343750281250002890625029687500304687503125000032031250\
        3281250033593750343750003515625035937500367187503750000038281250390625003984375040625000414062504218750042968750\
        4375000044531250453125004609375046875000476562504843750049218750500000005078125051562500523437505312500053906250\
        5468750055468750562500005703125057812500585937505937500060156250609375006171875062500000632812506406250064843750\
        6562500066406250671875006796875068750000695312507031250071093750718750007265625073437500742187507500000075781250\
        7656250077343750781250007890625079687500804687508125000082031250828125008359375084375000851562508593750086718750\
        8750000088281250890625008984375090625000914062509218750092968750937500009453125095312500960937509687500097656250\
        9843750099218750
        """
}
