internal import CDBus
import Glibc

/// libdbus type codes (`#define DBUS_TYPE_STRING ((int) 's')` and friends do not import into Swift).
enum TypeCode {
    static let invalid: Int32 = 0
    static let byte = code("y"), bool = code("b"), int16 = code("n"), uint16 = code("q")
    static let int32 = code("i"), uint32 = code("u"), int64 = code("x"), uint64 = code("t")
    static let double = code("d"), string = code("s"), objectPath = code("o"), signature = code("g")
    static let unixFD = code("h"), array = code("a"), variant = code("v"), structure = code("r")
    static let dictEntry = code("e")

    private static func code(_ c: Unicode.Scalar) -> Int32 { Int32(c.value) }
}

/// Converts between `DBusValue`s and libdbus message bodies. Only used on the loop thread (or on messages no other
/// thread can see).
enum Marshalling {
    // MARK: Encoding

    /// Appends `values` to the body of `message`. Everything libdbus would reject with an abort (its argument checks
    /// are fatal by default) is validated first and reported as InvalidArgs instead.
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for value in values { try validate(value) }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            guard append(value, to: &iter) else { throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "Cannot append \(value.signature)") }
        }
    }

    static func validate(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .objectPath(let path):
            guard dbus_validate_path(path, nil) != 0 else { throw .invalidArgs("Invalid object path '\(path)'") }
        case .signature(let sig):
            guard dbus_signature_validate(sig, nil) != 0 else { throw .invalidArgs("Invalid signature '\(sig)'") }
        case .string(let s):
            guard !s.utf8.contains(0) else { throw .invalidArgs("String contains NUL") }
        case .byteArray:
            return
        case .array(let element, let elements):
            guard dbus_signature_validate_single(element, nil) != 0, !element.hasPrefix("{") else {
                throw .invalidArgs("Invalid array element signature '\(element)'")
            }
            if element == "y" {
                for e in elements {
                    guard case .byte = e else { throw .invalidArgs("Array of 'y' holds '\(e.signature)'") }
                }
                return
            }
            for e in elements {
                guard e.signature == element else { throw .invalidArgs("Array of '\(element)' holds '\(e.signature)'") }
                try validate(e)
            }
        case .dictionary(let key, let valueSig, let entries):
            guard key.count == 1, dbus_type_is_basic(Int32(key.unicodeScalars.first!.value)) != 0,
                  dbus_signature_validate_single(valueSig, nil) != 0 else {
                throw .invalidArgs("Invalid dictionary signature 'a{\(key)\(valueSig)}'")
            }
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == valueSig else {
                    throw .invalidArgs("Dictionary a{\(key)\(valueSig)} holds {\(entry.key.signature)\(entry.value.signature)}")
                }
                try validate(entry.key)
                try validate(entry.value)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("Empty structure") }
            for f in fields { try validate(f) }
        case .variant(let inner):
            try validate(inner)
        case .unixFD(let fd):
            guard fcntl(fd, F_GETFD) != -1 else { throw .invalidArgs("Not an open file descriptor: \(fd)") }
        case .receivedFD(let received):
            guard received.peek() >= 0 else { throw .invalidArgs("A received fd that was already taken") }
        case .byte, .bool, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double:
            break
        }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(var v): return dbus_message_iter_append_basic(&iter, TypeCode.byte, &v) != 0
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            return dbus_message_iter_append_basic(&iter, TypeCode.bool, &v) != 0
        case .int16(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int16, &v) != 0
        case .uint16(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint16, &v) != 0
        case .int32(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int32, &v) != 0
        case .uint32(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint32, &v) != 0
        case .int64(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int64, &v) != 0
        case .uint64(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint64, &v) != 0
        case .double(var v): return dbus_message_iter_append_basic(&iter, TypeCode.double, &v) != 0
        case .unixFD(var v): return dbus_message_iter_append_basic(&iter, TypeCode.unixFD, &v) != 0
        case .receivedFD(let received):     // sent on: libdbus dups it, the holder keeps its own
            var v = received.peek()
            return dbus_message_iter_append_basic(&iter, TypeCode.unixFD, &v) != 0
        case .string(let s): return appendString(s, TypeCode.string, &iter)
        case .objectPath(let s): return appendString(s, TypeCode.objectPath, &iter)
        case .signature(let s): return appendString(s, TypeCode.signature, &iter)
        case .byteArray(let bytes):
            return appendBytes(bytes, &iter)
        case .array("y", let elements):
            // The spelling of values built by hand: sent as the same one fixed array.
            var bytes = [UInt8]()
            bytes.reserveCapacity(elements.count)
            for case .byte(let b) in elements { bytes.append(b) }
            return appendBytes(bytes, &iter)
        case .array(let element, let elements):
            return withContainer(TypeCode.array, element, &iter) { sub in
                for e in elements where !append(e, to: &sub) { return false }
                return true
            }
        case .dictionary(let key, let valueSig, let entries):
            return withContainer(TypeCode.array, "{" + key + valueSig + "}", &iter) { sub in
                for entry in entries {
                    let ok = withContainer(TypeCode.dictEntry, nil, &sub) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                    if !ok { return false }
                }
                return true
            }
        case .structure(let fields):
            return withContainer(TypeCode.structure, nil, &iter) { sub in
                for f in fields where !append(f, to: &sub) { return false }
                return true
            }
        case .variant(let inner):
            return withContainer(TypeCode.variant, inner.signature, &iter) { sub in append(inner, to: &sub) }
        }
    }

    /// An `ay` as one fixed array: one call into libdbus instead of one per byte.
    private static func appendBytes(_ bytes: [UInt8], _ iter: inout DBusMessageIter) -> Bool {
        withContainer(TypeCode.array, "y", &iter) { sub in
            bytes.withUnsafeBufferPointer { buffer in
                var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
                return dbus_message_iter_append_fixed_array(&sub, TypeCode.byte, &base, Int32(buffer.count)) != 0
            }
        }
    }

    private static func appendString(_ s: String, _ type: Int32, _ iter: inout DBusMessageIter) -> Bool {
        s.withCString { p in
            var pointer: UnsafePointer<CChar>? = p
            return dbus_message_iter_append_basic(&iter, type, &pointer) != 0
        }
    }

    private static func withContainer(_ type: Int32, _ signature: String?, _ iter: inout DBusMessageIter,
                                      _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = dbus_message_iter_open_container(&iter, type, signature, &sub) != 0
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    // MARK: Decoding

    /// The whole message: header fields and body, decoded once.
    static func decodeMessage(_ message: OpaquePointer) -> DBusMessage {
        let kind: DBusMessage.Kind
        switch dbus_message_get_type(message) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        return DBusMessage(
            kind: kind,
            path: dbus_message_get_path(message).map { String(cString: $0) },
            interface: dbus_message_get_interface(message).map { String(cString: $0) },
            member: dbus_message_get_member(message).map { String(cString: $0) },
            errorName: dbus_message_get_error_name(message).map { String(cString: $0) },
            sender: dbus_message_get_sender(message).map { String(cString: $0) },
            destination: dbus_message_get_destination(message).map { String(cString: $0) },
            body: decodeBody(message))
    }

    static func decodeBody(_ message: OpaquePointer) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        return decodeAll(&iter)
    }

    private static func decodeAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
        var values = [DBusValue]()
        while true {
            let type = dbus_message_iter_get_arg_type(&iter)
            if type == TypeCode.invalid { break }
            values.append(decode(type, &iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var v = initial
        withUnsafeMutablePointer(to: &v) { dbus_message_iter_get_basic(&iter, $0) }
        return v
    }

    private static func stringValue(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func decode(_ type: Int32, _ iter: inout DBusMessageIter) -> DBusValue {
        switch type {
        case TypeCode.byte: return .byte(basic(&iter, UInt8(0)))
        case TypeCode.bool: return .bool(basic(&iter, dbus_bool_t(0)) != 0)
        case TypeCode.int16: return .int16(basic(&iter, Int16(0)))
        case TypeCode.uint16: return .uint16(basic(&iter, UInt16(0)))
        case TypeCode.int32: return .int32(basic(&iter, Int32(0)))
        case TypeCode.uint32: return .uint32(basic(&iter, UInt32(0)))
        case TypeCode.int64: return .int64(basic(&iter, Int64(0)))
        case TypeCode.uint64: return .uint64(basic(&iter, UInt64(0)))
        case TypeCode.double: return .double(basic(&iter, Double(0)))
        case TypeCode.unixFD: return .receivedFD(ReceivedFD(basic(&iter, Int32(-1))))
        case TypeCode.string: return .string(stringValue(&iter))
        case TypeCode.objectPath: return .objectPath(stringValue(&iter))
        case TypeCode.signature: return .signature(stringValue(&iter))
        case TypeCode.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(decode(dbus_message_iter_get_arg_type(&sub), &sub))
        case TypeCode.structure:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(decodeAll(&sub))
        case TypeCode.array:
            return decodeArray(&iter)
        default:
            // Unknown future type codes: keep the position consistent, expose nothing.
            return .structure([])
        }
    }

    private static func decodeArray(_ iter: inout DBusMessageIter) -> DBusValue {
        let elementType = dbus_message_iter_get_element_type(&iter)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        if elementType == TypeCode.byte {
            var base: UnsafePointer<UInt8>? = nil
            var count: Int32 = 0
            dbus_message_iter_get_fixed_array(&sub, &base, &count)
            guard let base, count > 0 else { return .byteArray([]) }
            return .byteArray(Array(UnsafeBufferPointer(start: base, count: Int(count))))
        }
        // The array's own signature names the element type even when the array is empty. Cut as bytes (signatures
        // are ASCII): `String`'s own `dropFirst` and `prefix` step by grapheme, and this runs for every array of every
        // message, so their Unicode code stayed resident (docs/dev/MEMORY.md).
        var full: [UInt8] = [UInt8(ascii: "a")]
        if let raw = dbus_message_iter_get_signature(&iter) {
            full = Array(UnsafeRawBufferPointer(start: raw, count: strlen(raw)))
            dbus_free(raw)
        }
        let element = String(decoding: full.dropFirst(), as: UTF8.self)
        if elementType == TypeCode.dictEntry {
            let inner = full.dropFirst(2).dropLast()            // strip a{ }
            let key = String(decoding: inner.prefix(1), as: UTF8.self)
            let value = String(decoding: inner.dropFirst(), as: UTF8.self)
            var entries = [DBusDictEntry]()
            while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let k = decode(dbus_message_iter_get_arg_type(&pair), &pair)
                dbus_message_iter_next(&pair)
                let v = decode(dbus_message_iter_get_arg_type(&pair), &pair)
                entries.append(DBusDictEntry(key: k, value: v))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(key: key, value: value, entries)
        }
        return .array(element, decodeAll(&sub))
    }
}
