/// An advertisement's AD structures (Core spec, Vol 3 Part C §11: length, type, data; multi-byte values
/// little-endian) rebuilt from the fields BlueZ parsed out of it, for the Home Assistant Bluetooth proxy's raw
/// advertisements (docs/dev/esphome-proxy.md). BlueZ's D-Bus API hands out fields, not the packet, so the proxy
/// sends what Home Assistant's parser (bluetooth-data-tools' `parse_advertisement_data`) reads back as the same
/// name, service UUIDs, service data, manufacturer data and TX power.
///
/// The bound is ESPHome's: at most `maxLength` bytes (a legacy advertisement and its scan response, 31 each). When
/// everything does not fit, structures are kept in this order and whatever does not fit is left out, the next ones
/// still tried in the space left:
/// 1. flags (0x01), only when BlueZ reported non-zero `AdvertisingFlags` (Home Assistant ignores them; made-up flags
///    would claim a discoverability nobody saw);
/// 2. service data, by UUID (0x16, 0x20, 0x21), each entry whole or not at all: most passive sensors live here;
/// 3. manufacturer data, by company id (0xFF, the id first), each entry whole or not at all;
/// 4. the service UUID lists, 16-bit (0x03), 32-bit (0x05), 128-bit (0x07), without the UUIDs that already key
///    service data (BlueZ adds those to `UUIDs` too); a list cut short is sent as "incomplete" (0x02, 0x04, 0x06);
/// 5. the name: complete (0x09), else as much as fits, cut on a character boundary, as shortened (0x08);
/// 6. TX power (0x0A);
/// 7. the other AD types of BlueZ's `AdvertisingData`, verbatim, by type.
///
/// Dictionaries are walked in key order without sorting into a new array: this runs for every advertisement heard
/// while the proxy is on (tens a second), and the output array is the only allocation.
public enum AdvertisementBytes {
    public static let maxLength = 62

    /// AD types this builder writes from the parsed fields; `other` entries of these types are not copied again.
    static let builtTypes: Set<UInt8> = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x16, 0x20,
                                         0x21, 0xFF]

    /// Each UUID width and its "complete list" AD type (the "incomplete" one is one less).
    static let uuidLists: [(width: Int, complete: UInt8)] = [(2, 0x03), (4, 0x05), (16, 0x07)]

    public static func build(flags: [UInt8]? = nil, name: String? = nil, uuids: [BluetoothUUID] = [],
                             serviceData: [BluetoothUUID: [UInt8]] = [:], manufacturerData: [UInt16: [UInt8]] = [:],
                             txPower: Int? = nil, other: [UInt8: [UInt8]] = [:], limit: Int = maxLength) -> [UInt8] {
        var out = Writer(limit: limit)
        if let flags, flags.contains(where: { $0 != 0 }) { out.structure(0x01, flags) }
        var last: BluetoothUUID?
        while let uuid = next(after: last, in: serviceData) {
            last = uuid
            let data = serviceData[uuid]!
            switch width(uuid) {
            case 2: out.structure(0x16, 2 + data.count) { $0.uuid(uuid, width: 2); $0.append(data) }
            case 4: out.structure(0x20, 4 + data.count) { $0.uuid(uuid, width: 4); $0.append(data) }
            default: out.structure(0x21, 16 + data.count) { $0.uuid(uuid, width: 16); $0.append(data) }
            }
        }
        var company: UInt16?
        while let id = next(after: company, in: manufacturerData) {
            company = id
            let data = manufacturerData[id]!
            out.structure(0xFF, 2 + data.count) { $0.append(UInt8(id & 0xFF)); $0.append(UInt8(id >> 8)); $0.append(data) }
        }
        for (width, complete) in uuidLists {
            let listed = { (uuid: BluetoothUUID) in Self.width(uuid) == width && serviceData[uuid] == nil }
            let count = uuids.count(where: listed)
            let fitting = min(count, (out.room - 2) / width)
            guard fitting > 0 else { continue }
            out.structure(fitting == count ? complete : complete - 1, fitting * width) { writer in
                var written = 0
                for uuid in uuids where written < fitting && listed(uuid) {
                    writer.uuid(uuid, width: width)
                    written += 1
                }
            }
        }
        if let name, !name.isEmpty {
            let utf8 = name.utf8
            if utf8.count + 2 <= out.room {
                out.structure(0x09, utf8.count) { $0.append(utf8) }
            } else if out.room > 2 {
                var cut = out.room - 2
                let start = utf8.startIndex
                // Not inside a multi-byte character: back off over continuation bytes (10xxxxxx).
                while cut > 0, utf8[utf8.index(start, offsetBy: cut)] & 0xC0 == 0x80 { cut -= 1 }
                if cut > 0 { out.structure(0x08, cut) { $0.append(utf8.prefix(cut)) } }
            }
        }
        if let txPower, let level = Int8(exactly: txPower) { out.structure(0x0A, [UInt8(bitPattern: level)]) }
        var type: UInt8?
        while let next = next(after: type, in: other) {
            type = next
            guard next != 0, !builtTypes.contains(next), let data = other[next], !data.isEmpty else { continue }
            out.structure(next, data)
        }
        return out.bytes
    }

    /// 2, 4 or 16: how the UUID is written (16- and 32-bit forms only on the Bluetooth base UUID).
    static func width(_ uuid: BluetoothUUID) -> Int {
        guard uuid.isOnBase else { return 16 }
        return uuid.high >> 48 == 0 ? 2 : 4
    }

    /// The smallest key above `last` (the first with nil): key order without a sorted copy; the dictionaries hold
    /// a handful of entries.
    static func next<Key: Comparable, Value>(after last: Key?, in dictionary: [Key: Value]) -> Key? {
        var best: Key?
        for key in dictionary.keys where last.map({ key > $0 }) ?? true {
            if best.map({ key < $0 }) ?? true { best = key }
        }
        return best
    }

    /// The output, refusing any structure that would pass the limit (or a single structure's 255-byte length).
    struct Writer {
        let limit: Int
        var bytes: [UInt8] = []

        init(limit: Int) {
            self.limit = limit
            bytes.reserveCapacity(limit)
        }

        var room: Int { limit - bytes.count }

        mutating func structure(_ type: UInt8, _ data: [UInt8]) {
            structure(type, data.count) { $0.append(data) }
        }

        /// `length` is the data's, without the type; `write` appends exactly that many bytes.
        mutating func structure(_ type: UInt8, _ length: Int, _ write: (inout Writer) -> Void) {
            guard length > 0, length + 2 <= room, length < 255 else { return }
            bytes.append(UInt8(length + 1))
            bytes.append(type)
            write(&self)
        }

        mutating func append(_ byte: UInt8) { bytes.append(byte) }
        mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }
        mutating func append<Bytes: Sequence<UInt8>>(_ data: Bytes) { bytes.append(contentsOf: data) }

        /// Little-endian: the 128-bit value's least significant byte first.
        mutating func uuid(_ uuid: BluetoothUUID, width: Int) {
            switch width {
            case 2, 4:
                let value = uuid.high >> 32
                for shift in stride(from: 0, to: width * 8, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
            default:
                for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: uuid.low >> UInt64(shift))) }
                for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: uuid.high >> UInt64(shift))) }
            }
        }
    }
}
