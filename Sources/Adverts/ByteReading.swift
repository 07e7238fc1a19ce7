/// Little- and big-endian integers out of broadcast bytes. Callers check lengths first: these trap on a short array,
/// which the fuzz targets would catch.
enum ByteReading {
    static func unsignedLE(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func unsignedBE(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func signedLE(_ bytes: some Collection<UInt8>) -> Int64 {
        signExtend(unsignedLE(bytes), bits: bytes.count * 8)
    }

    static func signedBE(_ bytes: some Collection<UInt8>) -> Int64 {
        signExtend(unsignedBE(bytes), bits: bytes.count * 8)
    }

    static func signExtend(_ value: UInt64, bits: Int) -> Int64 {
        guard bits > 0, bits < 64 else { return Int64(bitPattern: value) }
        let shift = UInt64(64 - bits)
        return Int64(bitPattern: value << shift) >> Int64(shift)
    }

    /// IEEE 754 little-endian float of 2, 4 or 8 bytes.
    static func floatLE(_ bytes: some Collection<UInt8>) -> Double? {
        let raw = unsignedLE(bytes)
        switch bytes.count {
        case 2: return Double(Float16(bitPattern: UInt16(raw)))
        case 4: return Double(Float(bitPattern: UInt32(raw)))
        case 8: return Double(bitPattern: raw)
        default: return nil
        }
    }

    /// "aa:bb:…" order of six bytes sent least significant first.
    static func reversedAddress(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Array(bytes.reversed())
    }
}
