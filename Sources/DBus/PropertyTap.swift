internal import CDBus
import Glibc

/// A handler for one byte-array property of one object, run on the loop thread for every `PropertiesChanged` that
/// carries it, ahead of the async subscriptions (the signal path: a characteristic's `Value`).
///
/// It reads the message where libdbus holds it: the header fields are compared as C strings and the value is taken
/// with one `dbus_message_iter_get_fixed_array` and lent to the handler where it lies, so a notification costs no
/// allocation, not a `DBusMessage` with five header strings and a decoded body of one enum value per byte (which was
/// most of gattbridge's own CPU on this path), nor a byte array (an allocation and a free per value).
///
/// A tap adds no match rule: some subscription must make the bus route the signal here (and, for a well-known
/// sender, track its owner, which is how `sender` is checked). A class: the loop walks the taps for every signal,
/// and a struct of five references would be copied (retained and released five times) at each step.
final class PropertyTap: Sendable {
    let sender: String
    let path: String
    let interface: String
    let property: String
    /// The value (lent from the message: valid only during the call), and whether it came alone (no other property
    /// changed or invalidated in the same signal). True consumes the signal: the subscriptions do not see it.
    let handler: @Sendable (_ value: UnsafeRawBufferPointer, _ alone: Bool) -> Bool
    /// A unique bus name (":1.42") is matched as it is; a well-known one through its owner's watch.
    let senderIsUnique: Bool
    /// Loop thread only (`ConnectionCore`'s signal delivery): the owner watch of `sender` as looked up at
    /// `ConnectionCore.ownersGeneration`, kept until that moves on.
    nonisolated(unsafe) var ownerLookup: (generation: UInt64, watch: ConnectionCore.OwnerWatch?) = (.max, nil)

    init(sender: String, path: String, interface: String, property: String,
         handler: @escaping @Sendable (_ value: UnsafeRawBufferPointer, _ alone: Bool) -> Bool) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.property = property
        self.handler = handler
        senderIsUnique = sender.utf8.first == UInt8(ascii: ":")
    }

    /// The property's bytes if `raw`'s body is a `PropertiesChanged` (`sa{sv}as`) of `interface` that carries it as
    /// `ay`, with whether it came alone; nil for anything else. The bytes lie in `raw`: valid while it lives.
    ///
    /// Each libdbus iterator call is some hundred instructions, so none is made that the walk does not need: an array
    /// of anything but dict entries (or an empty one) ends the loop below at once with nothing found, as a check of
    /// its element type would have.
    static func value(in raw: OpaquePointer, interface: String, property: String) -> (bytes: UnsafeRawBufferPointer, alone: Bool)? {
        var args = DBusMessageIter()
        guard dbus_message_iter_init(raw, &args) != 0, dbus_message_iter_get_arg_type(&args) == TypeCode.string,
              Self.string(&args, equals: interface),
              dbus_message_iter_next(&args) != 0, dbus_message_iter_get_arg_type(&args) == TypeCode.array
        else { return nil }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&args, &entries)
        var bytes: UnsafeRawBufferPointer?
        var others = false
        while dbus_message_iter_get_arg_type(&entries) == TypeCode.dictEntry {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if dbus_message_iter_get_arg_type(&entry) == TypeCode.string, Self.string(&entry, equals: property),
               dbus_message_iter_next(&entry) != 0, dbus_message_iter_get_arg_type(&entry) == TypeCode.variant {
                bytes = Self.byteArray(in: &entry)
            } else {
                others = true
            }
            dbus_message_iter_next(&entries)
        }
        guard let bytes else { return nil }
        if dbus_message_iter_next(&args) != 0, dbus_message_iter_get_arg_type(&args) == TypeCode.array {
            var invalidated = DBusMessageIter()
            dbus_message_iter_recurse(&args, &invalidated)
            if dbus_message_iter_get_arg_type(&invalidated) != TypeCode.invalid { others = true }
        }
        return (bytes, !others)
    }

    private static func string(_ iter: inout DBusMessageIter, equals expected: String) -> Bool {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        guard let pointer else { return false }
        return expected.withCString { strcmp($0, pointer) == 0 }
    }

    /// The `ay` inside the variant at `iter` (where the message holds it), or nil when the variant holds something
    /// else. The element type is asked only of an empty array: a non-empty one shows it as the type of its first
    /// element.
    private static func byteArray(in iter: inout DBusMessageIter) -> UnsafeRawBufferPointer? {
        var variant = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &variant)
        guard dbus_message_iter_get_arg_type(&variant) == TypeCode.array else { return nil }
        var elements = DBusMessageIter()
        dbus_message_iter_recurse(&variant, &elements)
        switch dbus_message_iter_get_arg_type(&elements) {
        case TypeCode.byte: break
        case TypeCode.invalid:
            return dbus_message_iter_get_element_type(&variant) == TypeCode.byte ? UnsafeRawBufferPointer(start: nil, count: 0) : nil
        default: return nil
        }
        var base: UnsafePointer<UInt8>? = nil
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(&elements, &base, &count)
        guard let base, count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: base, count: Int(count))
    }
}
