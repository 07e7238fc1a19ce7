/// One D-Bus value with its full type, so that empty containers still carry the signature libdbus needs.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8), bool(Bool), int16(Int16), uint16(UInt16), int32(Int32), uint32(UInt32)
    case int64(Int64), uint64(UInt64), double(Double)
    case string(String), objectPath(String), signature(String)
    /// An fd to send: libdbus dups it, the caller keeps (and closes) its own.
    case unixFD(Int32)
    /// An fd received: owned by the `ReceivedFD`, to be `take()`n by the one who uses it.
    case receivedFD(ReceivedFD)
    /// `ay`, kept as bytes: as `.array("y", …)` every byte would be a whole `DBusValue` (48 bytes), and byte arrays
    /// are what the daemon receives most (every notification's `Value`, every broadcast's service data).
    case byteArray([UInt8])
    /// Element signature, elements (every element must have that signature). The decoder gives `ay` as `.byteArray`.
    case array(String, [DBusValue])
    /// `a{..}`: key and value signatures, entries in wire order.
    case dictionary(key: String, value: String, [DBusDictEntry])
    case structure([DBusValue])
    indirect case variant(DBusValue)

    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD, .receivedFD: "h"
        case .byteArray: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// `ay`
    public static func bytes(_ bytes: [UInt8]) -> DBusValue {
        .byteArray(bytes)
    }

    /// `a{sv}`; keys are sorted so that equal dictionaries marshal identically.
    public static func stringDict(_ dict: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", dict.keys.sorted().map { key in
            DBusDictEntry(key: .string(key), value: .variant(dict[key]!))
        })
    }

    /// Strips any number of variant layers.
    public var unwrapped: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }

    /// `s`, `o` or `g`, through variants.
    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let b) = unwrapped { return b }
        return nil
    }

    /// Any integer type, through variants; nil when it does not fit an `Int`.
    public var int: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    /// `ay`, through variants.
    public var bytes: [UInt8]? {
        if case .byteArray(let bytes) = unwrapped { return bytes }
        guard case .array("y", let elements) = unwrapped else { return nil }
        var result = [UInt8]()
        result.reserveCapacity(elements.count)
        for element in elements {
            guard case .byte(let b) = element else { return nil }
            result.append(b)
        }
        return result
    }

    /// The elements of an array, through variants.
    public var array: [DBusValue]? {
        switch unwrapped {
        case .array(_, let elements): return elements
        case .byteArray(let bytes): return bytes.map { .byte($0) }
        default: return nil
        }
    }

    /// `a{sv}` / `a{s*}`, through variants; one variant layer is stripped from each value.
    public var stringDict: [String: DBusValue]? {
        guard case .dictionary("s", _, let entries) = unwrapped else { return nil }
        var result = [String: DBusValue](minimumCapacity: entries.count)
        for entry in entries {
            guard case .string(let key) = entry.key else { return nil }
            if case .variant(let inner) = entry.value {
                result[key] = inner
            } else {
                result[key] = entry.value
            }
        }
        return result
    }
}

public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}
