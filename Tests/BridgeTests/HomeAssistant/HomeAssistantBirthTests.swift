import MQTT
import Testing
@testable import BridgeHomeAssistant

@Suite struct HomeAssistantBirthTests {
    static func status(_ text: String) -> MQTTMessage {
        MQTTMessage(topic: "homeassistant/status", string: text, qos: .atLeastOnce, retain: false)
    }

    @Test func aBurstOfBirthsArmsOneRepublishAndTheNextBurstAnother() {
        var birth = HomeAssistantBirth()
        let now = ContinuousClock.now
        #expect(birth.heard(Self.status("offline"), now: now) == nil)
        #expect(birth.heard(Self.status("online"), now: now) == now + HomeAssistantBirth.delay)
        for _ in 0..<1000 { #expect(birth.heard(Self.status("online"), now: now) == nil) }
        birth.republishing()
        #expect(birth.heard(Self.status("online"), now: now) == now + HomeAssistantBirth.delay)
    }
}
