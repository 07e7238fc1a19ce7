import Testing
@testable import Config

@Suite struct DeviceValidationTests {
    @Test func missingRequiredKeys() {
        #expect(issues("devices:\n  - name: a\n  - address: \"C0:FF:EE:00:00:01\"\n") == [
            "config.yaml:2:5: device \"a\" is missing required key \"address\"",
            "config.yaml:2:5: device \"a\" is missing required key \"channels\"",
            "config.yaml:3:5: device #2 is missing required key \"name\"",
            "config.yaml:3:5: device #2 is missing required key \"channels\"",
        ])
    }

    @Test func channelsOfAnUnnamedDeviceSayWhichDevice() {
        #expect(issues("devices:\n  - address: \"C0:FF:EE:00:00:01\"\n    channels: [{ codec: hex, characteristic: \"2a19\" }]\n") == [
            "config.yaml:2:5: device #1 is missing required key \"name\"",
            "config.yaml:3:16: channel #1 of device #1 is missing required key \"name\"",
        ])
    }

    @Test func badAddress() {
        #expect(issues(oneDevice.replacingOccurrences("C0:FF:EE:00:00:01", with: "C0:FF:EE:00:01")) == [
            "config.yaml:3:14: address in device \"strap\" must be a Bluetooth address like \"AA:BB:CC:DD:EE:FF\", got \"C0:FF:EE:00:01\"",
        ])
    }

    @Test func duplicateNamesCompareAfterSanitising() {
        let yaml = """
        devices:
          - name: "a/b"
            address: "C0:FF:EE:00:00:01"
            channels: [{ name: x, characteristic: "2a19", codec: uint8 }]
          - name: "a+b"
            address: "C0:FF:EE:00:00:02"
            channels: [{ name: x, characteristic: "2a19", codec: uint8 }]
          - name: "$a_b"
            address: "C0:FF:EE:00:00:03"
            channels: [{ name: x, characteristic: "2a19", codec: uint8 }]
        """
        #expect(issues(yaml) == [
            "config.yaml:5:11: duplicate device name \"a+b\" (both are \"a_b\" as a topic level); first used by device \"a/b\" at 2:11",
            "config.yaml:8:11: duplicate device name \"$a_b\" (both are \"a_b\" as a topic level); first used by device \"a/b\" at 2:11",
        ])
    }

    @Test func reservedAndEmptyNames() {
        let yaml = """
        devices:
          - name: bridge
            address: "C0:FF:EE:00:00:01"
            channels: [{ name: x, characteristic: "2a19", codec: uint8 }]
          - name: "$$"
            address: "C0:FF:EE:00:00:02"
            channels: [{ name: x, characteristic: "2a19", codec: uint8 }]
        """
        #expect(issues(yaml) == [
            "config.yaml:2:11: device name \"bridge\" is reserved (the bridge publishes its own state under it)",
            "config.yaml:5:11: device name \"$$\" is empty as an MQTT topic level",
        ])
    }

    @Test func channelsMustBeANonEmptyList() {
        #expect(issues("devices:\n  - name: a\n    address: \"C0:FF:EE:00:00:01\"\n    channels: []\n") == [
            "config.yaml:4:15: device \"a\" has no channels",
        ])
        #expect(issues("devices:\n  - name: a\n    address: \"C0:FF:EE:00:00:01\"\n    channels:\n") == [
            "config.yaml:4:14: channels in device \"a\" must be a list of channels, got nothing (null)",
        ])
        #expect(issues("devices:\n  name: a\n") == ["config.yaml:2:3: devices must be a list of devices, got a mapping"])
    }

    @Test func duplicateChannelNamesAndTopicLevels() {
        let yaml = """
        devices:
          - name: d
            address: "C0:FF:EE:00:00:01"
            channels:
              - { name: temp, characteristic: "2a6e", codec: int16 }
              - { name: temp, characteristic: "2a6f", codec: uint16 }
              - { name: humidity, characteristic: "2a6f", codec: uint16, topic: temp }
              - { name: availability, characteristic: "2a19", codec: uint8 }
              - { name: "x#", characteristic: "2a19", codec: uint8 }
              - { name: "x+", characteristic: "2a19", codec: uint8 }
              - { name: state, characteristic: "2a19", codec: uint8, topic: owner }
        """
        #expect(issues(yaml) == [
            "config.yaml:6:17: duplicate channel name \"temp\" in device \"d\" (first at 5:17)",
            "config.yaml:7:73: channel \"humidity\" in device \"d\" has the same topic level \"temp\" as channel \"temp\" at 5:17",
            "config.yaml:8:17: channel \"availability\" in device \"d\" cannot use the topic level \"availability\" (the bridge publishes the device's availability there)",
            "config.yaml:10:17: channel \"x+\" in device \"d\" has the same topic level \"x_\" as channel \"x#\" at 9:17",
            "config.yaml:11:69: channel \"state\" in device \"d\" cannot use the topic level \"owner\" (the bridge publishes the device's owner there)",
        ])
    }

    @Test func sameChannelNamesInDifferentDevicesAreFine() throws {
        let yaml = """
        devices:
          - name: a
            address: "C0:FF:EE:00:00:01"
            channels: [{ name: battery, characteristic: "2a19", codec: battery_level }]
          - name: b
            address: "C0:FF:EE:00:00:02"
            channels: [{ name: battery, characteristic: "2a19", codec: battery_level }]
        """
        let config = try config(yaml)
        #expect(config.devices.map(\.topicLevel) == ["a", "b"])
    }
}
