/// A payload's UTF-8, written by the codecs and the JSON writer into an array the caller keeps from value to value:
/// once it has grown to a channel's largest value, decoding and writing a value allocates nothing (issue 45: one
/// `String` per value, its appends and index checks, were most of a decoded value's instructions).
public struct UTF8Buffer: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 0) {
        bytes = []
        // Not for none: `reserveCapacity(0)` costs ~80 instructions, and a publisher makes an empty one per value.
        if capacity > 0 { bytes.reserveCapacity(capacity) }
    }

    public var count: Int { bytes.count }

    /// Empties it for the next value, keeping its storage.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }

    /// The text, for the callers that need a `String` (events, replies, tests).
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The bytes lent to `body`, valid only during the call.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// A literal's bytes, which need no UTF-8 check and no count of characters.
    @inline(__always)
    mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(contentsOf other: some Sequence<UInt8>) {
        bytes.append(contentsOf: other)
    }

    mutating func append(contentsOf other: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: other)
    }

    /// `value` in decimal digits, at least `minimumDigits` (at most 20) of them (leading zeros), made on the stack and
    /// appended at once: no `String(value)` and its allocation, and one capacity check rather than one per digit.
    mutating func append(decimal value: UInt64, minimumDigits: Int = 1) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = 20
            var rest = value
            repeat {
                index &-= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            while 20 &- index < minimumDigits, index > 0 {
                index &-= 1
                digits[index] = UInt8(ascii: "0")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    /// Signed decimal, as `String(value)` spells it.
    mutating func append<T: BinaryInteger>(integer value: T) {
        if value < 0 { append(UInt8(ascii: "-")) }
        append(decimal: UInt64(value.magnitude))
    }
}

/// A number's `write(to:)` (`NumberFormatting`) appends its digits here as ASCII bytes, without a `String`.
extension UTF8Buffer: TextOutputStream {
    public mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes.append(contentsOf: $0) }
    }

    public mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    /// Removes `suffix` from the end when the bytes written since `start` end with it.
    mutating func dropSuffix(_ suffix: StaticString, after start: Int) {
        let length = suffix.utf8CodeUnitCount
        guard bytes.count - start >= length,
              bytes[(bytes.count - length)...].elementsEqual(UnsafeBufferPointer(start: suffix.utf8Start, count: length))
        else { return }
        bytes.removeLast(length)
    }

    /// `bytes` as UTF-8 text, as `String(decoding:as:)` spells them: well-formed UTF-8 as it is (no `String`), anything
    /// else with its ill-formed parts replaced by U+FFFD, by the standard library itself.
    mutating func append(utf8Repaired bytes: UnsafeRawBufferPointer) {
        if UTF8Validation.isWellFormed(bytes) {
            append(contentsOf: bytes)
        } else {
            append(contentsOf: String(decoding: bytes, as: UTF8.self).utf8)
        }
    }
}

/// Well-formed UTF-8 (the Unicode Standard's table 3-7): no overlong forms, surrogates or values above U+10FFFF,
/// no truncated or stray continuation bytes.
enum UTF8Validation {
    static func isWellFormed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index &+= 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF    // the range of the second byte
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return false
            }
            guard count - index >= length, (low...high).contains(bytes[index + 1]) else { return false }
            var next = index + 2
            while next < index + length {
                guard bytes[next] & 0xC0 == 0x80 else { return false }
                next += 1
            }
            index += length
        }
        return true
    }
}

extension UTF8Buffer {
    /// `count` bytes written in place by `body` (which returns how many it wrote, at most `count`).
    mutating func appendUninitialized(count: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Int) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: count))
        let written = bytes.withUnsafeMutableBufferPointer { all in
            body(UnsafeMutableBufferPointer(rebasing: all[start...]))
        }
        bytes.removeLast(count - written)
    }
}

/// Writes text through a pointer into memory the caller sized beforehand (a stack buffer): no capacity check per
/// piece, for a payload whose longest spelling is known (the heart-rate JSON). The caller appends the result to a
/// `UTF8Buffer` in one piece.
struct UTF8Cursor {
    private(set) var count = 0
    private let base: UnsafeMutablePointer<UInt8>

    init(_ base: UnsafeMutablePointer<UInt8>) {
        self.base = base
    }

    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        base[count] = byte
        count &+= 1
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        (base + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count &+= text.utf8CodeUnitCount
    }

    /// Eight bytes from `source` stored at once, of which the cursor moves past `keeping` (at most 8): the memory
    /// must have room for all eight.
    @inline(__always)
    mutating func putEight(_ source: UnsafeRawPointer, keeping: Int) {
        UnsafeMutableRawPointer(base + count).storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
        count &+= keeping
    }

    /// `value` in decimal (up to 10 digits), from the right, two digits at a time.
    mutating func put(decimal value: UInt32) {
        let digits = value < 10 ? 1 : value < 100 ? 2 : value < 1000 ? 3 : value < 10000 ? 4 : value < 100_000 ? 5
            : value < 1_000_000 ? 6 : value < 10_000_000 ? 7 : value < 100_000_000 ? 8 : value < 1_000_000_000 ? 9 : 10
        let pairs = Self.digitPairs.utf8Start
        var rest = value
        var index = count &+ digits
        while index &- count >= 2 {
            let pair = Int(truncatingIfNeeded: rest % 100) &* 2
            rest /= 100
            index &-= 2
            base[index] = pairs[pair]
            base[index &+ 1] = pairs[pair &+ 1]
        }
        if index > count {
            base[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest)
        }
        count = count &+ digits
    }

    /// "00", "01", … "99": two digits per division.
    private static let digitPairs: StaticString = """
        0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
        5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899
        """
}
