/// A Bluetooth UUID, always held as its full 128-bit value.
///
/// 16- and 32-bit forms are aliases on the Bluetooth base UUID, so "2a37", "0x2A37" and
/// "00002a37-0000-1000-8000-00805f9b34fb" are equal values; that is what lets config, CLI
/// arguments and BlueZ's strings be compared directly.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The most significant 64 bits.
    public let high: UInt64
    /// The least significant 64 bits.
    public let low: UInt64

    /// 0000xxxx-0000-1000-8000-00805f9b34fb: the high half without its top 32 bits, and the low half.
    static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A SIG-assigned 16-bit UUID on the base UUID.
    public init(_ short: UInt16) {
        self.init(UInt32(short))
    }

    /// A SIG-assigned 32-bit UUID on the base UUID.
    public init(_ short: UInt32) {
        high = UInt64(short) << 32 | Self.baseHigh
        low = Self.baseLow
    }

    /// Parses "2a37", "0x2A37", "0000180d" (32-bit), or a full 128-bit UUID with or without dashes; case-insensitive.
    public init?(_ string: String) {
        var text = Substring(string)
        if text.hasPrefix("0x") || text.hasPrefix("0X") { text = text.dropFirst(2) }
        let digits: Substring
        if text.utf8.count == 36 {
            // Dashes only at the canonical 8-4-4-4-12 positions.
            let chars = Array(text.utf8)
            for (index, char) in chars.enumerated() {
                let isDashPosition = index == 8 || index == 13 || index == 18 || index == 23
                if isDashPosition != (char == UInt8(ascii: "-")) { return nil }
            }
            digits = Substring(text.filter { $0 != "-" })
        } else {
            digits = text
        }
        guard digits.utf8.allSatisfy(\.isHexDigitASCII) else { return nil }
        switch digits.utf8.count {
        case 4:
            guard let value = UInt16(digits, radix: 16) else { return nil }
            self.init(value)
        case 8:
            guard let value = UInt32(digits, radix: 16) else { return nil }
            self.init(value)
        case 32:
            guard let high = UInt64(digits.prefix(16), radix: 16),
                  let low = UInt64(digits.suffix(16), radix: 16) else { return nil }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// True when this is a 16- or 32-bit alias on the Bluetooth base UUID.
    public var isOnBase: Bool {
        low == Self.baseLow && high & 0xFFFF_FFFF == Self.baseHigh
    }

    /// The 16-bit value when this UUID is a 16-bit alias on the base UUID.
    public var uint16: UInt16? {
        guard isOnBase, high >> 48 == 0 else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// Canonical lower-case 8-4-4-4-12 form, as BlueZ reports UUIDs.
    public var uuidString: String {
        let hex = Self.hex(high, digits: 16) + Self.hex(low, digits: 16)
        let chars = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(chars[$0]) }.joined(separator: "-")
    }

    /// "2a37" (or "0001abcd" for a 32-bit alias) when the UUID is on the base UUID.
    public var shortString: String? {
        guard isOnBase else { return nil }
        let value = high >> 32
        return value <= 0xFFFF ? Self.hex(value, digits: 4) : Self.hex(value, digits: 8)
    }

    public var description: String {
        shortString ?? uuidString
    }

    /// The SIG-assigned (or widely known vendor) name, for display only.
    public var sigName: String? {
        SIGNames.name(for: self)
    }

    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
