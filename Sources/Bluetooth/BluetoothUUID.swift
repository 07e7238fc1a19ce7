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
    ///
    /// Reads the UTF-8 bytes: BlueZ's service-data keys are parsed on every broadcast, and String's character
    /// operations would run grapheme breaking and the standard library's Unicode tables for what is ASCII.
    public init?(_ string: String) {
        var text = Array(string.utf8)[...]
        if text.count >= 2, text[text.startIndex] == UInt8(ascii: "0"), text[text.startIndex + 1] | 0x20 == UInt8(ascii: "x") {
            text = text.dropFirst(2)
        }
        if text.count == 36 {
            // Dashes only at the canonical 8-4-4-4-12 positions.
            for (index, char) in text.enumerated() {
                let isDashPosition = index == 8 || index == 13 || index == 18 || index == 23
                if isDashPosition != (char == UInt8(ascii: "-")) { return nil }
            }
            text = text.filter { $0 != UInt8(ascii: "-") }[...]
        }
        guard text.count == 4 || text.count == 8 || text.count == 32 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, char) in text.enumerated() {
            guard let nibble = char.hexDigitValue else { return nil }
            if index < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
        }
        switch text.count {
        case 4: self.init(UInt16(high))
        case 8: self.init(UInt32(high))
        default: self.init(high: high, low: low)
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
