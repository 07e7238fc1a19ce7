import Bluetooth
import Codecs
import Testing
@testable import Config

@Suite struct ChannelValidationTests {
    @Test func missingRequiredKeys() {
        let yaml = "devices:\n  - name: d\n    address: \"C0:FF:EE:00:00:01\"\n    channels:\n      - name: c\n      - codec: hex\n"
        #expect(issues(yaml) == [
            "config.yaml:5:9: channel \"c\" is missing required key \"characteristic\"",
            "config.yaml:5:9: channel \"c\" is missing required key \"codec\"",
            "config.yaml:6:9: channel #2 of device \"d\" is missing required key \"name\"",
            "config.yaml:6:9: channel #2 of device \"d\" is missing required key \"characteristic\"",
        ])
    }

    @Test func unknownKeyWithSuggestion() {
        #expect(issues(channelYAML("intervall: 5", "colour: red")) == [
            "config.yaml:8:9: unknown key \"intervall\" in channel \"ch\" (did you mean \"interval\"?)",
            "config.yaml:9:9: unknown key \"colour\" in channel \"ch\"",
        ])
    }

    @Test func characteristicForms() throws {
        let yaml = channelYAML().replacingOccurrences("\"2a19\"", with: "\"0x180F/00002a19-0000-1000-8000-00805f9b34fb\"")
        let channel = try config(yaml).devices[0].channels[0]
        #expect(channel.service == BluetoothUUID(UInt16(0x180F)))
        #expect(channel.characteristic == BluetoothUUID(UInt16(0x2A19)))
        for bad in ["2a1", "180f/", "/2a19", "180f/2a19/1", "xyz", ""] {
            #expect(issues(channelYAML().replacingOccurrences("\"2a19\"", with: "\"\(bad)\"")) == [
                "config.yaml:6:25: characteristic in channel \"ch\" must be a UUID (\"2a37\" or 128-bit) or \"service/characteristic\", got \"\(bad)\"",
            ])
        }
    }

    @Test func unknownCodec() {
        #expect(issues(channelYAML(codec: "uint12")) == [
            "config.yaml:7:16: unknown codec \"uint12\" in channel \"ch\" (did you mean \"uint16\"?)",
        ])
        #expect(issues(channelYAML(codec: "json")).first?.hasPrefix(
            "config.yaml:7:16: unknown codec \"json\" in channel \"ch\" (expected one of hex, base64, text,") == true)
    }

    @Test func everyOption() throws {
        let channel = try config(channelYAML(codec: "text",
            "mode: read", "interval: 2.5", "retain: true", "qos: 2", "topic: \"my/topic\"", "writable: true",
            "write_with_response: true", "homeassistant: light", "command_ttl: 10", "delimiter: \"\\r\\n\"",
            "write_delimiter: \"\"", "max_line: 64", "flush_after: 0.25", "values: { \"on\": \"1\", \"off\": \"0\" }")).devices[0].channels[0]
        #expect(channel.mode == .read)
        #expect(channel.interval == .milliseconds(2500))
        #expect(channel.retain && channel.qos == 2)
        #expect(channel.topic == "my/topic" && channel.topicLevel == "my_topic")
        #expect(channel.writable && channel.writeWithResponse == true)
        #expect(channel.homeassistant == .light)
        #expect(channel.commandTTL == .seconds(10))
        #expect(channel.delimiter == "\r\n" && channel.writeDelimiter == "")
        #expect(channel.maxLine == 64 && channel.flushAfter == .milliseconds(250))
        #expect(channel.codec == (try Codec(.text, values: [("on", "1"), ("off", "0")])))
    }

    @Test func writeDelimiterDefaultsToDelimiter() throws {
        let channel = try config(channelYAML(codec: "text", "delimiter: \";\"")).devices[0].channels[0]
        #expect(channel.delimiter == ";" && channel.writeDelimiter == ";")
        #expect(try config(channelYAML(codec: "text", "delimiter: \"\"")).devices[0].channels[0].delimiter == "")
    }

    @Test func rangeAndTypeErrors() {
        #expect(issues(channelYAML("qos: 3", "interval: 0", "command_ttl: -1", "retain: \"true\"", "mode: poll", "homeassistant: fan")) == [
            "config.yaml:8:14: qos in channel \"ch\" must be an integer from 0 to 2, got 3",
            "config.yaml:9:19: interval in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got 0",
            "config.yaml:10:22: command_ttl in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got -1",
            "config.yaml:11:17: retain in channel \"ch\" must be true or false, got the quoted string \"true\" (remove the quotes)",
            "config.yaml:12:15: mode in channel \"ch\" must be one of notify, read, got \"poll\"",
            "config.yaml:13:24: homeassistant in channel \"ch\" must be one of sensor, binary_sensor, switch, light, event, device_trigger, got \"fan\"",
        ])
        #expect(issues(channelYAML(codec: "text", "max_line: 0", "flush_after: soon", "interval: .inf")) == [
            "config.yaml:8:19: max_line in channel \"ch\" must be an integer from 1 to 1048576, got 0",
            "config.yaml:9:22: flush_after in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got \"soon\"",
            "config.yaml:10:19: interval in channel \"ch\" must be a number of seconds greater than 0 and at most 1000000000, got \".inf\"",
        ])
        #expect(issues(channelYAML("mode: Read")) == [
            "config.yaml:8:15: mode in channel \"ch\" must be one of notify, read, got \"Read\" (did you mean \"read\"?)",
        ])
    }

    @Test func valuesMustEncodeWithTheCodec() {
        #expect(issues(channelYAML("values: { \"ON\": \"01\", \"OFF\": \"zz\", \"X\": \"1\" }", "writable: true")) == [
            "config.yaml:8:38: value \"zz\" for \"OFF\" in channel \"ch\" cannot be encoded by codec hex: \"zz\" is not hex: invalid digit in \"zz\"",
            "config.yaml:8:49: value \"1\" for \"X\" in channel \"ch\" cannot be encoded by codec hex: \"1\" is not hex: odd number of digits in \"1\"",
        ])
        #expect(issues(channelYAML(codec: "uint8", "values:", "  MAX: 256")) == [
            "config.yaml:9:16: value \"256\" for \"MAX\" in channel \"ch\" cannot be encoded by codec uint8: 256 is out of range for uint8 (0...255)",
        ])
        #expect(issues(channelYAML(codec: "battery_level", "values: { FULL: \"100\" }")) == [
            "config.yaml:8:17: values in channel \"ch\" cannot be used with codec battery_level, which is decode-only",
        ])
        #expect(issues(channelYAML("values: [\"01\"]")) == [
            "config.yaml:8:17: values in channel \"ch\" must be a mapping like { \"ON\": \"01\", \"OFF\": \"00\" }, got a list",
        ])
        #expect(issues(channelYAML("values: { ON: \"01\", ON: \"02\" }")) == [
            "config.yaml:8:29: duplicate key \"ON\" in values of channel \"ch\" (first at 8:19)",
        ])
    }

    @Test func unquotedValuesKeepTheirText() throws {
        // YAML would read 01 as the integer 1 and ON as a string (1.2) or boolean (1.1); the text is what counts.
        let channel = try config(channelYAML("values: { ON: 01, OFF: 00 }")).devices[0].channels[0]
        #expect(channel.values.map(\.key) == ["ON", "OFF"] && channel.values.map(\.value) == ["01", "00"])
    }

    @Test func writableRules() {
        #expect(issues(channelYAML(codec: "heart_rate_measurement", "writable: true")) == [
            "config.yaml:8:19: channel \"ch\" cannot be writable: codec heart_rate_measurement is decode-only",
        ])
        #expect(issues(channelYAML("write_with_response: false")) == [
            "config.yaml:8:9: write_with_response in channel \"ch\" has no effect unless writable is true",
        ])
        #expect(issues(channelYAML("homeassistant: switch")) == [
            "config.yaml:8:24: homeassistant switch in channel \"ch\" needs writable: true",
        ])
        #expect(issues(channelYAML("writable: maybe", "write_with_response: false")) == [
            "config.yaml:8:19: writable in channel \"ch\" must be true or false, got \"maybe\"",
        ])
    }

    @Test func eventAndDeviceTriggerAreOneOption() throws {
        for spelling in ["event", "device_trigger"] {
            let channel = try config(channelYAML("homeassistant: \(spelling)", "mode: notify",
                                                 "values: { press: \"01\", double_press: \"02\" }")).devices[0].channels[0]
            #expect(channel.homeassistant.isEvent)
            #expect(channel.homeassistant.rawValue == spelling)
            #expect(channel.values.map(\.key) == ["press", "double_press"])
        }
        #expect(!HomeAssistantComponent.sensor.isEvent && !HomeAssistantComponent.switch.isEvent)
    }

    @Test func eventRules() {
        // The event types are the names of values: without them there is nothing to announce.
        #expect(issues(channelYAML("homeassistant: event")) == [
            "config.yaml:8:24: homeassistant event in channel \"ch\" needs values naming its event types, like { \"press\": \"01\", \"double_press\": \"02\" }",
        ])
        #expect(issues(channelYAML("homeassistant: device_trigger", "values: {}")) == [
            "config.yaml:9:17: values in channel \"ch\" must name at least one event type for homeassistant device_trigger, like { \"press\": \"01\", \"double_press\": \"02\" }",
        ])
        // A decode-only codec cannot have values, so it cannot be an event channel either.
        #expect(issues(channelYAML(codec: "battery_level", "homeassistant: event")) == [
            "config.yaml:8:24: homeassistant event in channel \"ch\" needs values naming its event types, like { \"press\": \"01\", \"double_press\": \"02\" }",
        ])
        // A retained or polled value would fire the event again without a press.
        #expect(issues(channelYAML("homeassistant: event", "values: { press: \"01\" }", "retain: true", "mode: read")) == [
            "config.yaml:10:17: retain in channel \"ch\" cannot be true with homeassistant event: a retained event fires again whenever Home Assistant subscribes",
            "config.yaml:11:15: mode read in channel \"ch\" cannot be used with homeassistant event: every poll would fire an event",
        ])
        #expect(issues(channelYAML("homeassistant: event", "values: { press: \"01\" }", "retain: false", "writable: true")) == [])
    }

    @Test func keysWithoutEffectAreErrors() {
        #expect(issues(channelYAML("delimiter: \";\"", "max_line: 5")) == [
            "config.yaml:8:9: delimiter in channel \"ch\" only applies to codec text",
            "config.yaml:9:9: max_line in channel \"ch\" only applies to codec text",
        ])
        #expect(issues(channelYAML("mode: notify", "interval: 5")) == [
            "config.yaml:9:9: interval in channel \"ch\" has no effect with mode notify",
        ])
    }

    @Test func unquotedBackslashEscapesInDelimitersAreCaught() {
        #expect(issues(channelYAML(codec: "text", "delimiter: \\r\\n", "write_delimiter: '\\n'")) == [
            "config.yaml:8:20: delimiter in channel \"ch\" contains a backslash escape that YAML only interprets in double quotes; write it as \"\\r\\n\"",
            "config.yaml:9:26: write_delimiter in channel \"ch\" contains a backslash escape that YAML only interprets in double quotes; write it as \"\\n\"",
        ])
    }
}
