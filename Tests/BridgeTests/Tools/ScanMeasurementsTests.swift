import Adverts
import BlueZ
import Bluetooth
import Codecs
import DBus
import Testing
@testable import BridgeTools

/// What `scan` shows of each device's broadcast: `"measurements"` in the JSON, a cell of the table (docs/cli.md).
@Suite struct ScanMeasurementsTests {
    static let adapter = "/org/bluez/hci0"

    /// A Device1 as BlueZ reports it after a scan report, with the given service data (16-bit UUID → hex) and
    /// manufacturer data (company → hex).
    static func device(_ address: String, rssi: Int16 = -60, name: String? = nil, service: [UInt16: String] = [:],
                       manufacturer: [UInt16: String] = [:]) -> DeviceInfo {
        var properties: [String: DBusValue] = [
            "Address": .string(address),
            "Adapter": .objectPath(adapter),
            "RSSI": .int16(rssi),
            "ServiceData": .stringDict(Dictionary(uniqueKeysWithValues: service.map { uuid, hex in
                (BluetoothUUID(uuid).uuidString, DBusValue.bytes(try! Hex.decode(hex)))
            })),
            "ManufacturerData": .dictionary(key: "q", value: "v", manufacturer.map { company, hex in
                DBusDictEntry(key: .uint16(company), value: .variant(.bytes(try! Hex.decode(hex))))
            }),
        ]
        if let name { properties["Name"] = .string(name) }
        let path = adapter + "/dev_" + address.split(separator: ":").joined(separator: "_")
        return DeviceInfo(path: path, properties: properties)!
    }

    static let thermometer = device("A4:C1:38:8D:18:B2", service: [0xFCD2: "4002ca0903bf13"])   // BTHome 25.06 °C, 50.55 %
    static let plain = device("C0:FF:EE:00:00:01", rssi: -40, name: "Bench HRM")
    /// An encrypted BTHome broadcast: nothing decodes without its bindkey, which a scan never has.
    static let encrypted = device("54:48:E6:8F:80:A5", rssi: -70, service: [0xFCD2: "41a47266c95f730011223378237214"])
    /// A BTHome button press: decoded, but no reading.
    static let button = device("A4:C1:38:00:00:09", rssi: -80, service: [0xFCD2: "403a01"])

    @Test func jsonCarriesTheDecodedMeasurementsOfEachDevice() throws {
        var results = ScanResults(adapterPath: Self.adapter, services: [])
        for device in [Self.thermometer, Self.plain, Self.encrypted, Self.button] {
            let changed = results.apply(.deviceAdded(device))
            #expect(changed)
        }
        let byAddress = Dictionary(uniqueKeysWithValues: try #require(results.json.arrayValue).map {
            ($0["address"]!.stringValue!, $0)
        })
        #expect(byAddress["A4:C1:38:8D:18:B2"]?["measurements"] == ["temperature": 25.06, "humidity": 50.55])
        #expect(byAddress["C0:FF:EE:00:00:01"]?["measurements"] == .null)
        #expect(byAddress["54:48:E6:8F:80:A5"]?["measurements"] == .null)
        #expect(byAddress["A4:C1:38:00:00:09"]?["measurements"] == .object([]))
        #expect(results.json.arrayValue?.first?.objectValue?.map(\.0)
            == ["address", "address_type", "name", "rssi", "services", "paired", "bonded", "measurements"])
    }

    @Test func aNewBroadcastReplacesTheMeasurementsAndARemovedDeviceDropsThem() throws {
        var results = ScanResults(adapterPath: Self.adapter, services: [])
        _ = results.apply(.deviceAdded(Self.thermometer))
        let warmer = Self.device("A4:C1:38:8D:18:B2", service: [0xFCD2: "4002d209"])   // 25.14 °C
        let changed = results.apply(.deviceChanged(warmer, changed: ["ServiceData"]))
        #expect(changed)
        #expect(results.json.arrayValue?.first?["measurements"] == ["temperature": 25.14])
        let removed = results.apply(.deviceRemoved(path: warmer.path, address: warmer.address))
        #expect(removed)
        #expect(results.adverts.isEmpty)
        // The same data again is no change: nothing is decoded or redrawn.
        _ = results.apply(.deviceAdded(Self.thermometer))
        let again = results.apply(.deviceChanged(Self.thermometer, changed: ["RSSI"]))
        #expect(!again)
    }

    @Test func theCellListsReadingsAsPublished() throws {
        #expect(ScanMeasurements.cell(ScanMeasurements.decode(Self.thermometer)) == "temperature=25.06 humidity=50.55")
        #expect(ScanMeasurements.cell(nil) == "-")
        #expect(ScanMeasurements.cell(ScanMeasurements.decode(Self.button)) == "-")
        let states = AdvertResult(format: .bthome, measurements: [
            Measurement("opening", .state(true)), Measurement("motion", .state(false)), Measurement("count", .integer(7)),
        ])
        #expect(ScanMeasurements.cell(states) == "opening=ON motion=OFF count=7")
    }

    @Test func aLongCellIsCutAtAReadingAndTextsAreEscaped() {
        let many = AdvertResult(format: .bthome, measurements: (1...20).map { Measurement("reading_\($0)", .integer(Int64($0))) })
        let cell = ScanMeasurements.cell(many)
        #expect(cell.count <= ScanMeasurements.maxCellLength)
        #expect(cell == "reading_1=1 reading_2=2 reading_3=3 reading_4=4 …")
        let exact = AdvertResult(format: .bthome, measurements: [Measurement("a", .integer(1)), Measurement("b", .integer(2))])
        #expect(ScanMeasurements.cell(exact, maxLength: 7) == "a=1 b=2")
        #expect(ScanMeasurements.cell(exact, maxLength: 6) == "a=1 …")
        let text = AdvertResult(format: .bthome, measurements: [Measurement("text", .text("line\n\u{1B}[2Jcleared"))])
        #expect(ScanMeasurements.cell(text) == "text=line\\n\\x1b[2Jcleared")
        let long = AdvertResult(format: .bthome, measurements: [Measurement("text", .text(String(repeating: "x", count: 500)))])
        #expect(ScanMeasurements.cell(long, maxLength: 20).count == 20)
        #expect(ScanMeasurements.cell(long, maxLength: 20).hasSuffix("…"))
    }
}
