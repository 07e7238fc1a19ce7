import Testing
@testable import Bluetooth

/// The rebuilt AD structures, byte for byte. Every golden vector here was checked differentially: parsed by Home
/// Assistant's own parser (bluetooth-data-tools 1.29.24, `parse_advertisement_data_tuple`, in a throwaway venv), it
/// gave back exactly the name, service UUIDs, service data, manufacturer data and TX power written in each test
/// (for the ones over the bound: what the priority order keeps).
@Suite struct AdvertisementBytesTests {
    static func uuid(_ short: UInt16) -> BluetoothUUID { BluetoothUUID(short) }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// A thermometer that advertises a name and one service UUID, no data: the devices `HeardBroadcast` skips.
    @Test func aNameAndOneUUID() {
        let bytes = AdvertisementBytes.build(name: "LYWSD03MMC", uuids: [Self.uuid(0x181A)])
        #expect(Self.hex(bytes) == "03031a18" + "0b094c5957534430334d4d43")
    }

    /// BTHome: flags as BlueZ reported them, service data 16-bit, the service data's UUID not listed again
    /// (BlueZ adds it to `UUIDs`), TX power as a signed byte.
    @Test func flagsServiceDataUUIDsNameAndTxPower() {
        let bytes = AdvertisementBytes.build(flags: [0x06], name: "ATC_8D18B2", uuids: [Self.uuid(0xFCD2), Self.uuid(0x181A)],
                                             serviceData: [Self.uuid(0xFCD2): [0x40, 0x02, 0xCA, 0x09]], txPower: -4)
        #expect(Self.hex(bytes) == "020106" + "0716d2fc4002ca09" + "03031a18" + "0b094154435f384431384232" + "020afc")
    }

    /// Manufacturer data: the company id little-endian first, entries in company order.
    @Test func manufacturerDataInCompanyOrder() {
        let beacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 21)
        let bytes = AdvertisementBytes.build(name: "Kontakt", manufacturerData: [0x0059: [0x01], 0x004C: beacon])
        #expect(Self.hex(bytes) == "1aff4c00" + Self.hex(beacon) + "04ff590001" + "08094b6f6e74616b74")
    }

    /// 32- and 128-bit UUIDs, in lists and as service data keys, least significant byte first.
    @Test func wideUUIDsAreLittleEndian() throws {
        let nus = try #require(BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
        let custom = try #require(BluetoothUUID("0000fe95-0000-1000-8000-00805f9b34fc"))
        let bytes = AdvertisementBytes.build(uuids: [nus, BluetoothUUID(UInt32(0x0001ABCD))],
                                             serviceData: [custom: [0x30, 0x58], BluetoothUUID(UInt32(0x12345678)): [0x01, 0x02]])
        #expect(Self.hex(bytes) == "1321fc349b5f800000800010000095fe00003058" + "0720785634120102"
                    + "0505cdab0100" + "11079ecadc240ee5a9e093f3a3b50100406e")
    }

    /// Over ESPHome's 62 bytes: service and manufacturer data whole, then as many UUIDs as fit, marked incomplete
    /// (0x02); the name does not fit at all.
    @Test func overTheBoundDataFirstThenAnIncompleteUUIDList() {
        let bytes = AdvertisementBytes.build(name: "Température du salon, étage",
                                             uuids: (0..<8).map { Self.uuid(0x1800 + $0) },
                                             serviceData: [Self.uuid(0xFCD2): Array(repeating: 0x11, count: 20)],
                                             manufacturerData: [0x0499: Array(repeating: 0x22, count: 30)])
        #expect(bytes.count == 62)
        #expect(Self.hex(bytes) == "1716d2fc" + String(repeating: "11", count: 20) + "21ff9904" + String(repeating: "22", count: 30)
                    + "03020018")
    }

    /// The name cut to fit, as a shortened name (0x08), never inside a multi-byte character; what does not fit
    /// after it (TX power) is left out.
    @Test func aLongNameIsShortenedOnACharacterBoundary() {
        let bytes = AdvertisementBytes.build(name: "Température du salon, étage",
                                             manufacturerData: [0x0499: Array(repeating: 0x33, count: 32)], txPower: 0)
        #expect(bytes.count == 61)      // one byte more would have cut "é" in two
        #expect(Self.hex(bytes) == "23ff9904" + String(repeating: "33", count: 32)
                    + "180854656d70c3a97261747572652064752073616c6f6e2c20")
    }

    /// `AdvertisingData`'s other types verbatim; flags of zero, types the builder writes itself, type 0 and empty
    /// data are not copied.
    @Test func otherADTypesVerbatimWithoutDuplicatesOrZeroFlags() {
        let bytes = AdvertisementBytes.build(flags: [0x00], name: "x", txPower: 7,
                                             other: [0x26: [0x01, 0x01], 0x01: [0x06], 0x00: [0x01], 0x2A: [], 0xFF: [0x4C, 0x00]])
        #expect(Self.hex(bytes) == "020978" + "020a07" + "03260101")
    }

    @Test func nothingToSayIsNoBytesAndOutOfRangeTxPowerIsDropped() {
        #expect(AdvertisementBytes.build().isEmpty)
        #expect(AdvertisementBytes.build(name: "", txPower: 300).isEmpty)
        #expect(AdvertisementBytes.build(flags: []).isEmpty)
    }

    /// Every structure's length byte covers its type and data, and they add up to the whole: any mix of inputs,
    /// however large, stays within the bound and parses cleanly.
    @Test func structuresAlwaysTileTheOutputWithinTheBound() {
        for size in [0, 1, 20, 27, 29, 60, 200] {
            let bytes = AdvertisementBytes.build(flags: [0x1A], name: String(repeating: "é", count: size),
                                                 uuids: (0..<UInt16(size % 17)).map { Self.uuid(0x1800 + $0) },
                                                 serviceData: [Self.uuid(0xFCD2): Array(repeating: 1, count: size)],
                                                 manufacturerData: [0x004C: Array(repeating: 2, count: size / 2)],
                                                 txPower: -20, other: [0x26: Array(repeating: 3, count: size)])
            #expect(bytes.count <= AdvertisementBytes.maxLength)
            var offset = 0
            while offset < bytes.count {
                #expect(bytes[offset] >= 2, "size \(size): an empty structure at \(offset)")
                offset += 1 + Int(bytes[offset])
            }
            #expect(offset == bytes.count, "size \(size)")
        }
    }
}
