import Testing
@testable import Adverts

@Suite struct AdvertEventTypesTests {
    @Test func typesByEventNameNumberedOrNot() {
        #expect(AdvertEventTypes.types(of: "button").first == "press")
        #expect(AdvertEventTypes.types(of: "button_2") == AdvertEventTypes.types(of: "button"))
        #expect(AdvertEventTypes.types(of: "dimmer") == ["rotate_left", "rotate_right"])
        #expect(AdvertEventTypes.types(of: "command_1") == ["off", "on", "toggle", "step_up", "step_down"])
        #expect(AdvertEventTypes.types(of: "temperature").isEmpty)
        #expect(AdvertEventTypes.types(of: "button_").isEmpty)
    }
}
