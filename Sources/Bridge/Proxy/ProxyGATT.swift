import BlueZ
import Bluetooth
import ESPHomeAPI

/// A connected device's GATT database as the proxy numbers it for Home Assistant, which caches services per address
/// and reads, writes and subscribes by handle: the numbering must be the same on every connection and name every
/// attribute once.
///
/// BlueZ's object paths carry attribute handles (`service000a`, `char000b`, `desc000d`), stable while the device's
/// database is; the proxy's handle is twice that. BlueZ does not export a characteristic's Client Characteristic
/// Configuration descriptor (0x2902) and refuses writes to it, yet Home Assistant enables notifications by writing
/// it: every notifying or indicating characteristic without one lists a CCCD at its own handle + 1, an odd number no
/// BlueZ object has, and a write there starts or stops notifications (`Attribute.cccd`).
package struct ProxyGATT: Sendable, Equatable {
    package enum Attribute: Sendable, Equatable {
        case characteristic(path: String)
        case descriptor(path: String)
        /// The CCCD of the characteristic at `path` (BlueZ's, or the one listed in its place).
        case cccd(characteristicPath: String)
    }

    package static let cccdUUID = BluetoothUUID(UInt16(0x2902))

    package private(set) var services: [APIMessage.GATTService] = []
    package private(set) var attributes: [UInt32: Attribute] = [:]
    /// The characteristic handle each CCCD handle belongs to (for notifications' data, sent under the former).
    package private(set) var characteristicOfCCCD: [UInt32: UInt32] = [:]

    package init(_ tree: GattTree) {
        for service in tree.services {
            guard let serviceHandle = Self.handle(service.info.path) else { continue }
            var entry = APIMessage.GATTService(uuid: Self.words(service.info.uuid), handle: serviceHandle)
            for characteristic in service.characteristics {
                guard let handle = Self.handle(characteristic.info.path) else { continue }
                attributes[handle] = .characteristic(path: characteristic.info.path)
                var item = APIMessage.GATTCharacteristic(uuid: Self.words(characteristic.info.uuid), handle: handle,
                                                         properties: Self.properties(characteristic.info.flags))
                var hasCCCD = false
                for descriptor in characteristic.descriptors {
                    guard let descriptorHandle = Self.handle(descriptor.path) else { continue }
                    if descriptor.uuid == Self.cccdUUID {
                        hasCCCD = true
                        attributes[descriptorHandle] = .cccd(characteristicPath: characteristic.info.path)
                        characteristicOfCCCD[descriptorHandle] = handle
                    } else {
                        attributes[descriptorHandle] = .descriptor(path: descriptor.path)
                    }
                    item.descriptors.append(APIMessage.GATTDescriptor(uuid: Self.words(descriptor.uuid),
                                                                      handle: descriptorHandle))
                }
                if characteristic.info.canNotify && !hasCCCD {
                    let cccd = handle + 1
                    attributes[cccd] = .cccd(characteristicPath: characteristic.info.path)
                    characteristicOfCCCD[cccd] = handle
                    item.descriptors.append(APIMessage.GATTDescriptor(uuid: Self.words(Self.cccdUUID), handle: cccd))
                }
                entry.characteristics.append(item)
            }
            services.append(entry)
        }
    }

    /// The handle of the characteristic whose object path is `path`.
    package func handle(ofCharacteristic path: String) -> UInt32? {
        Self.handle(path).flatMap { attributes[$0] == .characteristic(path: path) ? $0 : nil }
    }

    /// Twice the hex handle that ends a BlueZ GATT object path (`…/service000a`, `…/char000b`, `…/desc000d`); nil for
    /// another path.
    static func handle(_ path: String) -> UInt32? {
        let name = path.split(separator: "/").last ?? ""
        for prefix in ["service", "char", "desc"] where name.hasPrefix(prefix) {
            let digits = name.dropFirst(prefix.count)
            guard digits.count == 4, let value = UInt32(digits, radix: 16) else { return nil }
            return value * 2
        }
        return nil
    }

    /// A UUID as ESPHome's 128-bit form: two 64-bit words, the most significant first.
    static func words(_ uuid: BluetoothUUID) -> [UInt64] { [uuid.high, uuid.low] }

    /// BlueZ's flag strings as the characteristic properties byte of the Core spec (Vol 3, Part G, 3.3.1.1).
    static func properties(_ flags: [String]) -> UInt32 {
        var value: UInt32 = 0
        for flag in flags {
            switch flag {
            case "broadcast": value |= 0x01
            case "read", "encrypt-read", "encrypt-authenticated-read", "secure-read": value |= 0x02
            case "write-without-response": value |= 0x04
            case "write", "encrypt-write", "encrypt-authenticated-write", "secure-write": value |= 0x08
            case "notify": value |= 0x10
            case "indicate": value |= 0x20
            case "authenticated-signed-writes": value |= 0x40
            case "extended-properties", "reliable-write", "writable-auxiliaries": value |= 0x80
            default: break
            }
        }
        return value
    }
}
