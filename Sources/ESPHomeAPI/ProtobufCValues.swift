import CESPHomeProto
import CProtobufC

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The crossing between Swift values and protobuf-c's C structs, shared by APIMessage+Decode and APIMessage+Encode.

/// Unpacks `payload` with a generated `*__unpack` (protobuf-c's default allocator), hands the C struct to `read` and
/// frees it before returning; nil when protobuf-c refuses the bytes (truncated, a wrong wire type, a length past the
/// end). Nothing of the C struct outlives the call: `read` copies what it keeps into Swift values.
func unpacked<Struct, Result>(
    _ payload: [UInt8],
    _ unpack: (UnsafeMutablePointer<ProtobufCAllocator>?, Int, UnsafePointer<UInt8>?) -> UnsafeMutablePointer<Struct>?,
    _ read: (Struct) -> Result
) -> Result? {
    payload.withUnsafeBufferPointer { buffer -> Result? in
        guard let message = unpack(nil, buffer.count, buffer.baseAddress) else { return nil }
        defer { protobuf_c_message_free_unpacked(UnsafeMutableRawPointer(message).assumingMemoryBound(to: ProtobufCMessage.self), nil) }
        return read(message.pointee)
    }
}

/// A C string protobuf-c made, as Swift text. Invalid UTF-8 (protobuf-c 1.4 does not check it) becomes U+FFFD, and
/// the text ends at a NUL byte inside it, as the C string does.
func swiftString(_ pointer: UnsafeMutablePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}

func swiftBytes(_ data: ProtobufCBinaryData) -> [UInt8] {
    guard data.len > 0, let bytes = data.data else { return [] }
    return Array(UnsafeBufferPointer(start: bytes, count: data.len))
}

func swiftArray<Element>(_ pointer: UnsafeMutablePointer<Element>?, _ count: Int) -> [Element] {
    guard count > 0, let pointer else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
}

/// The elements of a repeated message field (an array of pointers), each read into a Swift value.
func swiftMessages<Struct, Value>(
    _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Struct>?>?, _ count: Int, _ read: (Struct) -> Value
) -> [Value] {
    guard count > 0, let pointer else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).compactMap { $0.map { read($0.pointee) } }
}

/// Owns the C memory a message being packed points into (strings, bytes, arrays, sub-messages): everything is
/// allocated here and freed together when the arena goes, after `packed` has copied the bytes out.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit {
        for block in blocks { free(block) }
    }

    private func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        guard let block = malloc(max(size, 1)) else { fatalError("out of memory") }
        blocks.append(block)
        return block
    }

    /// `text` as a C string: a NUL inside it ends the string on the wire too, as protobuf-c reads `char *` fields.
    func string(_ text: String) -> UnsafeMutablePointer<CChar> {
        var utf8 = Array(text.utf8)
        utf8.append(0)
        let block = allocate(utf8.count)
        block.copyMemory(from: utf8, byteCount: utf8.count)
        return block.assumingMemoryBound(to: CChar.self)
    }

    func bytes(_ bytes: [UInt8]) -> ProtobufCBinaryData {
        guard !bytes.isEmpty else { return ProtobufCBinaryData(len: 0, data: nil) }
        let block = allocate(bytes.count)
        block.copyMemory(from: bytes, byteCount: bytes.count)
        return ProtobufCBinaryData(len: bytes.count, data: block.assumingMemoryBound(to: UInt8.self))
    }

    /// `values` in C memory; the C structs here are plain data, so nothing needs deinitializing before `free`.
    func array<Element>(_ values: [Element]) -> UnsafeMutablePointer<Element>? {
        guard !values.isEmpty else { return nil }
        let pointer = allocate(MemoryLayout<Element>.stride * values.count).bindMemory(to: Element.self, capacity: values.count)
        pointer.initialize(from: values, count: values.count)
        return pointer
    }

    /// Each value in C memory, and the array of pointers to them a repeated message field is.
    func messages<Element>(_ values: [Element]) -> UnsafeMutablePointer<UnsafeMutablePointer<Element>?>? {
        guard let elements = array(values) else { return nil }
        return array((0..<values.count).map { Optional(elements + $0) })
    }

    func message<Element>(_ value: Element) -> UnsafeMutablePointer<Element> {
        array([value])!
    }
}

/// `empty` (a zeroed C struct) initialised by its generated `*__init`, which points it at its descriptor, filled by
/// `fill` with memory from an arena that lives until the bytes are out, and packed.
func packed<Struct>(
    _ empty: Struct, _ initialise: (UnsafeMutablePointer<Struct>?) -> Void, _ fill: (inout Struct, CArena) -> Void
) -> [UInt8] {
    let arena = CArena()
    var message = empty
    initialise(&message)
    fill(&message, arena)
    return withUnsafeMutablePointer(to: &message) { pointer -> [UInt8] in
        let base = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: ProtobufCMessage.self)
        let size = protobuf_c_message_get_packed_size(base)
        guard size > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBufferPointer { protobuf_c_message_pack(base, $0.baseAddress) }
        precondition(written == size, "protobuf-c packed a size other than it measured")
        return withExtendedLifetime(arena) { out }
    }
}

/// A generated C enum's value from a proto3 (open) enum's raw number, and back.
func cEnum<Enum: RawRepresentable>(_ value: Int32) -> Enum where Enum.RawValue: FixedWidthInteger {
    Enum(rawValue: Enum.RawValue(truncatingIfNeeded: value))!
}

func rawEnum<Enum: RawRepresentable>(_ value: Enum) -> Int32 where Enum.RawValue: FixedWidthInteger {
    Int32(truncatingIfNeeded: value.rawValue)
}
