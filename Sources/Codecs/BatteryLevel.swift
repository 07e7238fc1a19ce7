/// The `battery_level` codec for the Battery Level characteristic (0x2A19).
enum BatteryLevel {
    /// One uint8 percentage; values over 100 are prohibited by the characteristic's definition, so a device
    /// sending one is misbehaving and publishing it would mislead dashboards.
    static func decode(_ bytes: UnsafeRawBufferPointer, to out: inout UTF8Buffer) throws(CodecError) {
        guard bytes.count == 1 else {
            throw CodecError("codec battery_level needs exactly 1 byte, got \(bytes.count)")
        }
        guard bytes[0] <= 100 else {
            throw CodecError("battery level \(bytes[0]) is over 100%")
        }
        out.append(decimal: UInt64(bytes[0]))
    }
}
