import Config
import Testing
@testable import BridgeHomeAssistant

/// Clearing configs: on reload (`removedTopics`) and at start-up against retained leftovers (`staleTopics`).
@Suite struct DiscoveryTopicsTests {
    typealias F = DiscoveryFixtures

    @Test func removedChannelsAndDevicesAreCleared() throws {
        let old = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1")
        var config = try F.demoConfig()
        config.devices[0].channels.removeAll { $0.name == "battery" }
        config.devices.removeAll { $0.name == "desk-led" }
        let new = HomeAssistantDiscovery(config: config, version: "1")
        #expect(new.removedTopics(old: old) == [
            "homeassistant/sensor/gattbridge_C0FFEE000001/battery/config",
            "homeassistant/sensor/gattbridge_C0FFEE000003/rssi/config",
            "homeassistant/switch/gattbridge_C0FFEE000003/led/config",
        ])
        #expect(old.removedTopics(old: old).isEmpty)
        #expect(old.removedTopics(old: new).isEmpty)
    }

    @Test func changedComponentClearsTheOldOne() throws {
        let before = F.config([F.device("d", "AA:BB:CC:DD:EE:04", [try F.channel("s", .text, writable: true)])])
        let after = F.config([F.device("d", "AA:BB:CC:DD:EE:04", [try F.channel("s", .text)])])
        let removed = HomeAssistantDiscovery(config: after, version: "1")
            .removedTopics(old: HomeAssistantDiscovery(config: before, version: "1"))
        #expect(removed == ["homeassistant/text/gattbridge_AABBCCDDEE04/s/config"])
    }

    @Test func changedPrefixClearsEverythingUnderTheOldOne() throws {
        let old = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1")
        var config = try F.demoConfig()
        config.homeassistant.discoveryPrefix = "ha"
        let new = HomeAssistantDiscovery(config: config, version: "1")
        #expect(Set(new.removedTopics(old: old)) == old.configTopics())
        #expect(new.configTopics().allSatisfy { $0.hasPrefix("ha/") })
    }

    @Test func staleTopicsAreOursAndNotLive() throws {
        let discovery = HomeAssistantDiscovery(config: try F.demoConfig(), version: "1")
        let live = "homeassistant/sensor/gattbridge_C0FFEE000001/battery/config"
        let leftover = "homeassistant/sensor/gattbridge_C0FFEE000001/old_channel/config"
        let leftoverDevice = "homeassistant/binary_sensor/gattbridge_c0ffee0000ff/door/config"
        let foreign = "homeassistant/sensor/zigbee2mqtt_0x1234/temperature/config"
        #expect(discovery.staleTopics(retained: [live, leftover, foreign, leftoverDevice, leftover]) == [
            leftoverDevice, leftover,
        ])
        #expect(discovery.configFilter == "homeassistant/+/+/+/config")
        #expect(discovery.statusTopic == "homeassistant/status")
    }

    @Test(arguments: [
        ("homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/config", true),
        ("homeassistant/text/gattbridge_c0ffee000001/serial/config", true),
        ("homeassistant/binary_sensor/gattbridge_AABBCCDDEEFF/a-b_1/config", true),
        ("homeassistant/sensor/gattbridge_C0FFEE00000/heart_rate/config", false),     // 11 hex digits
        ("homeassistant/sensor/gattbridge_C0FFEE0000011/heart_rate/config", false),   // 13
        ("homeassistant/sensor/gattbridge_C0FFEE00000G/heart_rate/config", false),
        ("homeassistant/sensor/gattbridge_C0FFEE000001/heart rate/config", false),
        ("homeassistant/sensor/gattbridge_C0FFEE000001//config", false),
        ("homeassistant/sensor/gattbridge_C0FFEE000001/heart_rate/state", false),
        ("homeassistant/sensor/gattbridge_C0FFEE000001/config", false),
        ("homeassistant/sensor/x/gattbridge_C0FFEE000001/a/config", false),
        ("homeassistant/Sensor/gattbridge_C0FFEE000001/a/config", false),
        ("other/sensor/gattbridge_C0FFEE000001/a/config", false),
        ("homeassistant2/sensor/gattbridge_C0FFEE000001/a/config", false),
        ("homeassistant/sensor/tasmota_C0FFEE000001/a/config", false),
    ])
    func ownTopicMatcher(topic: String, expected: Bool) {
        #expect(HomeAssistantDiscovery.isOwnDiscoveryTopic(topic, prefix: "homeassistant") == expected)
    }

    @Test func ownTopicMatcherHonoursMultiLevelPrefixes() {
        let topic = "ha/disc/light/gattbridge_C0FFEE000003/led/config"
        #expect(HomeAssistantDiscovery.isOwnDiscoveryTopic(topic, prefix: "ha/disc"))
        #expect(!HomeAssistantDiscovery.isOwnDiscoveryTopic(topic, prefix: "ha"))
    }
}
