import Bluetooth
import Codecs
import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ConfigLoaderTests {
    /// docs/configuration.md verbatim.
    static let specExample = """
    mqtt:
      host: localhost            # default localhost
      port: 1883                 # default 1883, or 8883 when tls is set
      client_id: gattbridge      # default gattbridge-<hostname>
      username: bridge           # optional
      password_file: /run/credentials/gattbridge.service/mqtt-password   # or password: (discouraged)
      tls: { ca_file: …, cert_file: …, key_file: …, insecure: false }    # optional
      base_topic: gattbridge     # default gattbridge
      protocol: "5"              # "5" or "3.1.1"; default "5"
      keepalive: 30              # seconds
    bluetooth:
      adapter: hci0              # optional
    homeassistant:
      enabled: true              # default true
      discovery_prefix: homeassistant
    devices:
      - name: chest-strap        # unique; becomes the MQTT topic level (sanitised)
        address: "C0:FF:EE:00:00:01"
        channels:
          - name: heart_rate     # unique within the device; topic level
            characteristic: "2a37"   # UUID, optionally "service/characteristic"
            codec: heart_rate_measurement
            mode: notify         # notify (default if the characteristic can notify/indicate) | read (poll)
          - name: battery
            characteristic: "180f/2a19"
            codec: battery_level
            mode: read
            interval: 300        # seconds between polls when mode is read; also read once after each connect
            retain: true
      - name: hm10
        address: "C0:FF:EE:00:00:02"
        channels:
          - name: serial
            characteristic: "ffe0/ffe1"
            codec: text
            writable: true       # enables …/set
            write_with_response: false   # default: with response if the characteristic allows it, else without
      - name: desk-led
        address: "C0:FF:EE:00:00:03"
        channels:
          - name: led
            characteristic: "…"
            codec: hex
            values: { "ON": "01", "OFF": "00" }
            mode: read
            writable: true
            homeassistant: switch   # how to announce it: sensor (default), binary_sensor, switch, light
    """

    /// The verbatim example has only its two placeholders wrong: the password file does not exist here and
    /// "…" is not a UUID. Every key is known and every other value valid.
    @Test func specExampleVerbatimHasOnlyItsPlaceholdersWrong() {
        #expect(issues(Self.specExample) == [
            "config.yaml:6:18: cannot read password_file \"/run/credentials/gattbridge.service/mqtt-password\": No such file or directory",
            "config.yaml:42:25: characteristic in channel \"led\" must be a UUID (\"2a37\" or 128-bit) or \"service/characteristic\", got \"…\"",
        ])
    }

    @Test func specExampleWithPlaceholdersFilledIn() throws {
        let secret = try TemporaryFile("s3cret\n")
        defer { secret.remove() }
        let yaml = Self.specExample
            .replacingOccurrences("/run/credentials/gattbridge.service/mqtt-password", with: secret.path)
            .replacingOccurrences("characteristic: \"…\"", with: "characteristic: \"12345678-1234-5678-1234-56789abcdef0/12345678-1234-5678-1234-56789abcdef1\"")
        let config = try config(yaml)

        #expect(config.mqtt.host == "localhost")
        #expect(config.mqtt.port == 1883)
        #expect(config.mqtt.clientID == "gattbridge")
        #expect(config.mqtt.username == "bridge")
        #expect(config.mqtt.password?.value == "s3cret")
        #expect(config.mqtt.tls == TLSSettings(caFile: "…", certFile: "…", keyFile: "…", insecure: false))
        #expect(config.mqtt.baseTopic == "gattbridge")
        #expect(config.mqtt.protocolVersion == .v5)
        #expect(config.mqtt.keepalive == 30)
        #expect(config.bluetooth.adapter == "hci0")
        #expect(config.homeassistant == HomeAssistantSettings(enabled: true, discoveryPrefix: "homeassistant"))
        #expect(config.devices.map(\.name) == ["chest-strap", "hm10", "desk-led"])
        #expect(config.devices.map(\.address.description) == ["C0:FF:EE:00:00:01", "C0:FF:EE:00:00:02", "C0:FF:EE:00:00:03"])

        let strap = config.devices[0].channels
        #expect(strap[0] == ChannelConfig(name: "heart_rate", characteristic: BluetoothUUID(UInt16(0x2A37)),
                                          codec: try Codec(.heartRateMeasurement), mode: .notify))
        #expect(strap[1] == ChannelConfig(name: "battery", service: BluetoothUUID(UInt16(0x180F)),
                                          characteristic: BluetoothUUID(UInt16(0x2A19)), codec: try Codec(.batteryLevel),
                                          mode: .read, interval: .seconds(300), retain: true))

        let serial = config.devices[1].channels[0]
        #expect(serial.service == BluetoothUUID("ffe0"))
        #expect(serial.characteristic == BluetoothUUID("ffe1"))
        #expect(serial.codecKind == .text)
        #expect(serial.writable)
        #expect(serial.writeWithResponse == false)
        #expect(serial.mode == nil)
        #expect(serial.delimiter == "\n" && serial.writeDelimiter == "\n")
        #expect(serial.maxLine == 1024 && serial.flushAfter == .seconds(1))

        let led = config.devices[2].channels[0]
        #expect(led.service == BluetoothUUID("12345678-1234-5678-1234-56789abcdef0"))
        #expect(led.characteristic == BluetoothUUID("12345678-1234-5678-1234-56789abcdef1"))
        #expect(led.values.map(\.key) == ["ON", "OFF"])
        #expect(try led.codec.encode("ON") == [1])
        #expect(try led.codec.decode([0]) == "OFF")
        #expect(led.homeassistant == .switch)
        #expect(led.interval == .seconds(60))
    }

    @Test func defaultsAreResolved() throws {
        let config = try config(oneDevice)
        #expect(config.mqtt.host == "localhost")
        #expect(config.mqtt.port == 1883)
        #expect(config.mqtt.clientID == "gattbridge-\(hostname())")
        #expect(config.mqtt.username == nil && config.mqtt.password == nil && config.mqtt.tls == nil)
        #expect(config.mqtt.baseTopic == "gattbridge")
        #expect(config.mqtt.protocolVersion == .v5)
        #expect(config.mqtt.keepalive == 30)
        #expect(config.bluetooth.adapter == nil)
        #expect(config.homeassistant.enabled && config.homeassistant.discoveryPrefix == "homeassistant")

        let channel = config.devices[0].channels[0]
        #expect(channel.service == nil)
        #expect(channel.mode == nil)
        #expect(channel.interval == .seconds(60))
        #expect(!channel.retain)
        #expect(channel.qos == 1)
        #expect(channel.topic == nil && channel.topicLevel == "hr")
        #expect(!channel.writable && channel.writeWithResponse == nil)
        #expect(channel.values.isEmpty)
        #expect(channel.homeassistant == .sensor)
        #expect(channel.commandTTL == .seconds(30))
        #expect(channel.delimiter == "\n" && channel.writeDelimiter == "\n")
        #expect(channel.maxLine == 1024)
        #expect(channel.flushAfter == .seconds(1))
    }

    @Test func emptyAndSectionlessConfigsUseDefaults() throws {
        #expect(try config("") == BridgeConfig())
        #expect(try config("# nothing\n") == BridgeConfig())
        #expect(try config("mqtt:\nbluetooth:\nhomeassistant:\ndevices:\n") == BridgeConfig())
    }

    @Test func repositoryConfigsLoad() throws {
        // Resolved, so the repository is found even when the tests are reached through a symlink.
        let resolved = realpath(#filePath, nil).map { path in defer { free(path) }; return String(cString: path) } ?? #filePath
        let root = resolved.split(separator: "/").dropLast(3).joined(separator: "/")
        let demo = try ConfigLoader.load(path: "/\(root)/config/demo.yaml")
        #expect(demo.devices.map(\.name) == ["heart-rate-strap", "hm10", "desk-led", "balcony-thermometer"])
        #expect(demo.adverts.enabled && demo.devices[3].isPassive)
        #expect(demo.mqtt.host == "localhost" && demo.mqtt.port == 1883)
        let battery = demo.devices[0].channels[1]
        #expect(battery.codecKind == .batteryLevel && battery.mode == .read && battery.interval == .seconds(60) && battery.retain)
        let serial = demo.devices[1].channels[0]
        #expect(serial.codecKind == .text && serial.writable && serial.writeWithResponse == false)
        let led = demo.devices[2].channels[0]
        // The UUIDs bench/peripherals/led.py serves.
        #expect(led.service == BluetoothUUID("c0ffee00-1ed0-4c7a-9b1e-000000000001"))
        #expect(led.characteristic == BluetoothUUID("c0ffee00-1ed0-4c7a-9b1e-000000000002"))
        #expect(led.mode == .read && led.interval == .seconds(5) && led.writable && led.homeassistant == .switch)
        #expect(try led.codec.encode("ON") == [1] && led.codec.decode([0]) == "OFF")

        let example = try ConfigLoader.load(path: "/\(root)/config/gattbridge.example.yaml")
        #expect(example.devices.count == 3)
        #expect(example.devices[1].channels[0].writeDelimiter == "\r\n")
        #expect(example.devices[2].channels[0].topicLevel == "lamp")
    }

    @Test func unreadableFile() {
        #expect(throws: ConfigErrors(issues: [ConfigIssue(file: "/nonexistent/config.yaml", line: 0, column: 0,
                                                          message: "cannot read the config: No such file or directory")])) {
            try ConfigLoader.load(path: "/nonexistent/config.yaml")
        }
        #expect(ConfigIssue(file: "f.yaml", line: 0, column: 0, message: "m").description == "f.yaml: m")
    }

    @Test func invalidUTF8FileNamesTheLine() throws {
        let file = try TemporaryFile("mqtt:\n  host: caf\u{E9}\n", name: "config.yaml")
        defer { file.remove() }
        // Overwrite with Latin-1 bytes.
        let handle = fopen(file.path, "w")!
        fwrite([UInt8]("mqtt:\n  host: caf".utf8) + [0xE9, 0x0A], 1, 18, handle)
        fclose(handle)
        #expect(throws: ConfigErrors(issues: [ConfigIssue(file: file.path, line: 2, column: 1, message: "the config is not valid UTF-8")])) {
            try ConfigLoader.load(path: file.path)
        }
    }

    @Test func loadReportsThePathAsGiven() throws {
        let file = try TemporaryFile("mqtt:\n  prot: 5\n", name: "config.yaml")
        defer { file.remove() }
        #expect(throws: ConfigErrors(issues: [ConfigIssue(file: file.path, line: 2, column: 3, message: "unknown key \"prot\" in mqtt")])) {
            try ConfigLoader.load(path: file.path)
        }
    }

    @Test func yamlSyntaxErrorsCarryLibyamlsMark() {
        #expect(issues("mqtt:\n  host: a\n port: 1\n") == [
            "config.yaml:3:2: YAML syntax error: did not find expected key (while parsing a block mapping at line 1, column 1)",
        ])
        #expect(issues("devices: [a, b\n") == [
            "config.yaml:2:1: YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 10)",
        ])
        #expect(issues("mqtt: \"unterminated\n") .first?.hasPrefix("config.yaml:2:1: YAML syntax error: found unexpected end of stream") == true)
        #expect(issues("a: *missing\n") == ["config.yaml:1:4: YAML syntax error: found undefined alias"])
    }

    @Test func secondDocumentIsAnError() {
        #expect(issues("mqtt:\n  host: a\n---\nmqtt:\n  host: b\n") == ["config.yaml:3:1: the config must be a single YAML document"])
    }

    @Test func rootMustBeAMapping() {
        #expect(issues("- a\n- b\n") == ["config.yaml:1:1: the top level must be a mapping of keys to values, got a list"])
    }

    @Test func manyErrorsAreReportedAtOnceInFileOrder() {
        let yaml = """
        mqtt:
          port: "abc"
          qos: 1
        devices:
          - name: a
            address: "C0:FF:EE:00:00:01"
            channels:
              - name: x
                characteristic: "2a19"
                codec: uint8
                intervall: 5
                qos: 3
          - name: a
            address: "c0:ff:ee:00:00:01"
            channels:
              - name: y
                characteristic: "zz"
                codec: hexx
        """
        #expect(issues(yaml) == [
            "config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got the quoted string \"abc\"",
            "config.yaml:3:3: unknown key \"qos\" in mqtt",
            "config.yaml:11:9: unknown key \"intervall\" in channel \"x\" (did you mean \"interval\"?)",
            "config.yaml:12:14: qos in channel \"x\" must be an integer from 0 to 2, got 3",
            "config.yaml:13:11: duplicate device name \"a\"; first used by device \"a\" at 5:11",
            "config.yaml:14:14: duplicate address C0:FF:EE:00:00:01 in device \"a\"; already used by device \"a\" at 6:14",
            "config.yaml:17:25: characteristic in channel \"y\" must be a UUID (\"2a37\" or 128-bit) or \"service/characteristic\", got \"zz\"",
            "config.yaml:18:16: unknown codec \"hexx\" in channel \"y\" (did you mean \"hex\"?)",
        ])
    }

    @Test func aliasesAreExpandedAndRecursionIsBounded() throws {
        let yaml = """
        defaults: &ch
          characteristic: "2a19"
          codec: battery_level
        """
        #expect(issues(yaml) == ["config.yaml:1:1: unknown key \"defaults\" in the top level"])
        let shared = """
        devices:
          - name: a
            address: "C0:FF:EE:00:00:01"
            channels: &chs
              - name: battery
                characteristic: "2a19"
                codec: battery_level
          - name: b
            address: "C0:FF:EE:00:00:02"
            channels: *chs
        """
        #expect(try config(shared).devices.map { $0.channels[0].name } == ["battery", "battery"])
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            + "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            + "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
        #expect(issues(bomb).first?.contains("nested too deeply or too large") == true)
    }

    private func hostname() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, 255)
        return String(cString: buffer)
    }
}

extension String {
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
