import Testing
@testable import Adverts

@Suite struct BindkeyTests {
    @Test func thirtyTwoHexDigits() throws {
        let key = try #require(Bindkey(hex: "231d39c1d7cc1ab1aee224cd096db932\n"))
        #expect(key.bytes == bytes("231d39c1d7cc1ab1aee224cd096db932"))
        #expect(Bindkey(hex: "  231D39C1D7CC1AB1AEE224CD096DB932  ")?.bytes == key.bytes)
    }

    @Test(arguments: ["", "231d39c1d7cc1ab1aee224cd096db9", "231d39c1d7cc1ab1aee224cd096db93200", "231d39c1d7cc1ab1aee224cd096db93g",
                      "231d39c1 d7cc1ab1aee224cd096db932", "0x231d39c1d7cc1ab1aee224cd096db9", "231d39c1d7cc1ab1aee224cd096db9é2"])
    func anythingElseIsRefused(text: String) {
        #expect(Bindkey(hex: text) == nil)
    }

    @Test func descriptionHidesTheKey() {
        let key = Bindkey(hex: "231d39c1d7cc1ab1aee224cd096db932")!
        #expect("\(key)" == "<bindkey>")
    }
}
