import Codecs
import Testing
@testable import BridgeFeatures

/// `device/add` echoes the device it saved: an inline passkey or bindkey must not reach MQTT with it.
@Suite struct SecretsRedactedTests {
    @Test func inlinePasskeyAndBindkeyAreRedacted() throws {
        let device = try JSONValue.parse(#"{"name":"door","address":"C4:7C:8D:00:00:02","advert":"xiaomi","bindkey":"231d39c1d7cc1ab1aee224cd096db932","pairing":"passkey","passkey":"123456","bindkey_file":"door.key"}"#)
        let echoed = device.secretsRedacted
        #expect(echoed["bindkey"] == "<redacted>")
        #expect(echoed["passkey"] == "<redacted>")
        #expect(echoed["bindkey_file"] == "door.key")
        #expect(echoed["advert"] == "xiaomi")
        #expect(!echoed.serialized.contains("231d39c1"))
        #expect(JSONValue.array([]).secretsRedacted == .array([]))
    }
}
