import Testing
import Bluetooth

struct BluetoothAddressTests {
    @Test func parsesLowerAndUpperCase() throws {
        let lower = try #require(BluetoothAddress("c0:ff:ee:00:00:0a"))
        let upper = try #require(BluetoothAddress("C0:FF:EE:00:00:0A"))
        #expect(lower == upper)
        #expect(lower.description == "C0:FF:EE:00:00:0A")
        #expect(lower.withoutColons == "C0FFEE00000A")
        #expect(lower.rawValue == 0xC0FF_EE00_000A)
        #expect(lower.bytes == [0xC0, 0xFF, 0xEE, 0x00, 0x00, 0x0A])
    }

    @Test(arguments: ["", "C0:FF:EE:00:00", "C0:FF:EE:00:00:01:02", "C0FFEE00000A", "C0-FF-EE-00-00-0A",
                      "C0:FF:EE:00:00:0", "C0:FF:EE:00:00:0G", "C0:FF:EE:00::0A", " C0:FF:EE:00:00:0A", "C0:FF:EE:00:00:+A",
                      "C0:FF:EE:00:00:0A:", "C0:FF:EE:00:00:é", "C0:FF:EE:00:00é0A", "C0FF:EE:00:00:0A:0"])
    func rejectsMalformed(_ text: String) {
        #expect(BluetoothAddress(text) == nil)
    }

    @Test func ordersNumerically() throws {
        let a = try #require(BluetoothAddress("00:00:00:00:00:02"))
        let b = try #require(BluetoothAddress("00:00:00:00:01:01"))
        #expect(a < b)
        #expect([b, a].sorted() == [a, b])
    }

    @Test func rawValueKeepsLow48Bits() {
        #expect(BluetoothAddress(rawValue: 0xFFFF_0000_0000_0001).description == "00:00:00:00:00:01")
    }
}
