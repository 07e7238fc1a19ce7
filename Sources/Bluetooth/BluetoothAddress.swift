/// A 48-bit Bluetooth device address.
///
/// Stored as an integer so equality, hashing and ordering do not depend on how the text was spelled
/// (config files, BlueZ object paths and user input use different cases).
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The address in its low 48 bits, most significant byte first as written.
    public let rawValue: UInt64

    /// Parses "aa:bb:cc:dd:ee:ff" (either case). Exactly six two-digit hex groups separated by colons.
    public init?(_ string: String) {
        let groups = string.split(separator: ":", omittingEmptySubsequences: false)
        guard groups.count == 6 else { return nil }
        var value: UInt64 = 0
        for group in groups {
            guard group.utf8.count == 2, group.utf8.allSatisfy(\.isHexDigitASCII), let byte = UInt8(group, radix: 16) else { return nil }
            value = value << 8 | UInt64(byte)
        }
        rawValue = value
    }

    /// Keeps the low 48 bits of `rawValue`.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue & 0xFFFF_FFFF_FFFF
    }

    /// The six bytes, most significant first (the order in which the address is written).
    public var bytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> (8 * (5 - $0))) }
    }

    /// "AA:BB:CC:DD:EE:FF": upper case is what BlueZ reports, so values compare textually too.
    public var description: String {
        bytes.map(Self.hexByte).joined(separator: ":")
    }

    /// "AABBCCDDEEFF", used in identifiers where colons are not allowed (Home Assistant unique ids).
    public var withoutColons: String {
        bytes.map(Self.hexByte).joined()
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}

extension UInt8 {
    /// UInt8(_:radix:) accepts a leading sign; addresses and UUIDs must be plain hex digits.
    var isHexDigitASCII: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
