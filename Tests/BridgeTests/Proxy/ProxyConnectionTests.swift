import BlueZ
import DBus
import ESPHomeAPI
@testable import ESPHomeServer
import Testing
@testable import BridgeProxy

/// The proxy's numbering of a device's GATT database, its slots and its ATT errors (Sources/Bridge/Proxy).
@Suite struct ProxyConnectionTests {
    static let device = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"

    static func tree(withCCCD: Bool) -> GattTree {
        let service = GattServiceInfo(path: device + "/service000a", properties: ["UUID": .string("180d")])!
        let measurement = GattCharacteristicInfo(path: device + "/service000a/char000b", properties: [
            "UUID": .string("2a37"), "Flags": .array("s", [.string("notify")])])!
        let location = GattCharacteristicInfo(path: device + "/service000a/char000e", properties: [
            "UUID": .string("2a38"), "Flags": .array("s", [.string("read"), .string("write")])])!
        var descriptors = [GattDescriptorInfo(path: device + "/service000a/char000b/desc000d",
                                              properties: ["UUID": .string("2901")])!]
        if withCCCD {
            descriptors.append(GattDescriptorInfo(path: device + "/service000a/char000b/desc000c",
                                                  properties: ["UUID": .string("2902")])!)
        }
        return GattTree(services: [service], characteristics: [measurement, location], descriptors: descriptors)
    }

    @Test func handlesAreTwiceBlueZsAndAHiddenCCCDIsListedAtTheOddOneAfter() throws {
        let gatt = ProxyGATT(Self.tree(withCCCD: false))
        let service = try #require(gatt.services.first)
        #expect(service.handle == 0x14)
        #expect(service.uuid == [0x0000_180D_0000_1000, 0x8000_0080_5F9B_34FB])
        #expect(service.characteristics.map(\.handle) == [0x16, 0x1C])
        #expect(service.characteristics.map(\.properties) == [0x10, 0x0A])
        let descriptors = service.characteristics[0].descriptors
        #expect(descriptors.map(\.handle) == [0x1A, 0x17])
        #expect(descriptors.last?.uuid == ProxyGATT.words(ProxyGATT.cccdUUID))
        #expect(gatt.attributes[0x17] == .cccd(characteristicPath: Self.device + "/service000a/char000b"))
        #expect(gatt.characteristicOfCCCD[0x17] == 0x16)
        #expect(gatt.attributes[0x1A] == .descriptor(path: Self.device + "/service000a/char000b/desc000d"))
        #expect(service.characteristics[1].descriptors.isEmpty)   // not notifying: no CCCD
        // Every handle once: the cache Home Assistant keeps names each attribute by its own.
        let all = [service.handle] + service.characteristics.flatMap { [$0.handle] + $0.descriptors.map(\.handle) }
        #expect(Set(all).count == all.count)
    }

    @Test func aCCCDBlueZDoesExportIsTheOneListed() {
        let gatt = ProxyGATT(Self.tree(withCCCD: true))
        let descriptors = gatt.services[0].characteristics[0].descriptors
        #expect(descriptors.map(\.handle) == [0x18, 0x1A])   // in handle order, as GattTree keeps them
        #expect(gatt.attributes[0x18] == .cccd(characteristicPath: Self.device + "/service000a/char000b"))
        #expect(gatt.attributes[0x17] == nil)
    }

    @Test func theSameTreeIsTheSameNumberingOnEveryConnection() {
        #expect(ProxyGATT(Self.tree(withCCCD: false)) == ProxyGATT(Self.tree(withCCCD: false)))
        #expect(ProxyGATT.handle("/org/bluez/hci0/dev_X/service0001/charzzzz") == nil)
        #expect(ProxyGATT.handle("/org/bluez/hci0/dev_X") == nil)
    }

    @Test func slotsAreClaimedOnceAndReleasedOnce() {
        var table = ProxyConnectionTable(slots: 2)
        let home = APIClientID(value: 1), other = APIClientID(value: 2)
        let claims = [table.claim(0xA1, for: home), table.claim(0xA1, for: other), table.claim(0xA2, for: other),
                      table.claim(0xA3, for: home)]
        #expect(claims == [true, false, true, false])
        var status = APISession.Status()
        table.apply(to: &status)
        #expect((status.connectionsFree, status.connectionsLimit, status.allocated) == (0, 2, [0xA1, 0xA2]))
        table.connected(0xA1, mtu: 247)
        #expect(table.entry(0xA1) == .init(client: home, state: .connected, mtu: 247))
        #expect(table.addresses(of: other) == [0xA2])
        let released = [table.release(0xA1), table.release(0xA1)]
        #expect(released == [ProxyConnectionTable.Entry(client: home, state: .connected, mtu: 247), nil])
        table.apply(to: &status)
        #expect((status.connectionsFree, status.allocated) == (1, [0xA2]))
    }

    @Test func blueZErrorsBecomeTheATTCodesHomeAssistantReads() {
        #expect(ProxyGATTError(.notPermitted, writing: true).code == 0x03)
        #expect(ProxyGATTError(.notPermitted, writing: false).code == 0x02)
        #expect(ProxyGATTError(.notAuthorized, writing: false).code == 0x05)
        #expect(ProxyGATTError(.failed(reason: "Operation failed with ATT error: 0x0f"), writing: false).code == 0x0F)
        let other = ProxyGATTError(.failed(reason: "Software caused connection abort"), writing: true)
        #expect(other.code == 0x0E && other.message == "Software caused connection abort")
    }
}
