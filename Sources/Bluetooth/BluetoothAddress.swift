/// A 48-bit Bluetooth device address.
///
/// Stored as an integer so equality, hashing and ordering do not depend on how the text was spelled
/// (config files, BlueZ object paths and user input use different cases).
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The address in its low 48 bits, most significant byte first as written.
    public let rawValue: UInt64

    /// Parses "aa:bb:cc:dd:ee:ff" (either case). Exactly six two-digit hex groups separated by colons.
    ///
    /// Reads the UTF-8 bytes: every device change BlueZ signals is parsed here, and String's `split` would run
    /// grapheme breaking and the standard library's Unicode tables for what is ASCII (docs/dev/MEMORY.md).
    public init?(_ string: String) {
        var value: UInt64 = 0
        var count = 0
        for char in string.utf8 {
            defer { count += 1 }
            if count % 3 == 2 {
                guard char == UInt8(ascii: ":") else { return nil }
            } else {
                guard count < 17, let nibble = char.hexDigitValue else { return nil }
                value = value << 4 | UInt64(nibble)
            }
        }
        guard count == 17 else { return nil }
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
        String(decoding: [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]], as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}

extension UInt8 {
    /// UInt8(_:radix:) accepts a leading sign; addresses and UUIDs must be plain hex digits.
    var isHexDigitASCII: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }

    /// The value of a hex digit (either case); nil for anything else, a sign included.
    var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
