import Testing
import Bluetooth

struct BluetoothUUIDTests {
    @Test(arguments: ["2a37", "2A37", "0x2a37", "0X2A37", "00002a37", "00002A37-0000-1000-8000-00805F9B34FB",
                      "00002a37-0000-1000-8000-00805f9b34fb", "00002a3700001000800000805f9b34fb"])
    func spellingsOfOneShortUUIDAreEqual(_ text: String) throws {
        let uuid = try #require(BluetoothUUID(text))
        #expect(uuid == BluetoothUUID(UInt16(0x2A37)))
        #expect(uuid.uuidString == "00002a37-0000-1000-8000-00805f9b34fb")
        #expect(uuid.shortString == "2a37")
        #expect(uuid.description == "2a37")
        #expect(uuid.uint16 == 0x2A37)
        #expect(uuid.isOnBase)
    }

    @Test func thirtyTwoBitAliasKeepsEightDigits() throws {
        let uuid = try #require(BluetoothUUID("0001abcd"))
        #expect(uuid.uuidString == "0001abcd-0000-1000-8000-00805f9b34fb")
        #expect(uuid.shortString == "0001abcd")
        #expect(uuid.uint16 == nil)
        #expect(uuid == BluetoothUUID(UInt32(0x0001_ABCD)))
    }

    @Test func vendorUUIDHasNoShortForm() throws {
        let uuid = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        #expect(uuid.uuidString == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        #expect(uuid.shortString == nil)
        #expect(uuid.description == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        #expect(uuid.uint16 == nil)
        #expect(!uuid.isOnBase)
    }

    @Test func almostBaseIsNotShort() throws {
        let uuid = try #require(BluetoothUUID("00002a37-0000-1000-8000-00805f9b34fc"))
        #expect(uuid.shortString == nil)
        #expect(uuid != BluetoothUUID(UInt16(0x2A37)))
    }

    @Test(arguments: ["", "2a3", "2a37f", "0x", "zz37", "2a37-", "0x2a3g", "00002a37-0000-1000-8000-00805f9b34f",
                      "00002a37+0000-1000-8000-00805f9b34fb", "0000-2a37-0000-1000-8000-00805f9b34fb",
                      "00002a37-0000-1000-8000-00805f9b34fbx", "+2a3", "-2a3", "0x+a37", "x02a37", "é2a3", "2a3é", "00002a37-0000-1000-8000-00805f9b3éb"])
    func rejectsMalformed(_ text: String) {
        #expect(BluetoothUUID(text) == nil)
    }

    @Test func sigNames() throws {
        let names: [String: String] = [
            "1800": "Generic Access", "1801": "Generic Attribute", "180a": "Device Information", "180d": "Heart Rate",
            "180f": "Battery Service", "181a": "Environmental Sensing", "1816": "Cycling Speed and Cadence",
            "2a00": "Device Name", "2a19": "Battery Level", "2a37": "Heart Rate Measurement", "2a38": "Body Sensor Location",
            "2a29": "Manufacturer Name String", "2a6e": "Temperature", "2a6f": "Humidity", "2a6d": "Pressure",
            "2a5b": "CSC Measurement", "2a53": "RSC Measurement", "2a50": "PnP ID",
            "2902": "Client Characteristic Configuration", "2901": "Characteristic User Description",
            "ffe0": "HM-10 Serial", "ffe1": "HM-10 Serial Data",
            "6e400001-b5a3-f393-e0a9-e50e24dcca9e": "Nordic UART Service",
        ]
        for (text, name) in names {
            #expect(try #require(BluetoothUUID(text)).sigName == name, "\(text)")
        }
        #expect(BluetoothUUID("1234")?.sigName == nil)
        #expect(BluetoothUUID("12345678-1234-5678-1234-56789abcdef0")?.sigName == nil)
    }

    @Test func hashableAcrossSpellings() {
        let set: Set<BluetoothUUID> = [BluetoothUUID("180D")!, BluetoothUUID("0000180d-0000-1000-8000-00805f9b34fb")!]
        #expect(set.count == 1)
    }
}
