import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

@Suite struct MQTTSettingsTests {
    @Test func passwordFileIsReadAndOneTrailingNewlineStripped() throws {
        for (contents, expected) in [("hunter2\n", "hunter2"), ("hunter2\r\n", "hunter2"), ("hunter2", "hunter2"), ("a b\n\n", "a b\n")] {
            let file = try TemporaryFile(contents)
            defer { file.remove() }
            let config = try config("mqtt:\n  username: u\n  password_file: \(file.path)\n")
            #expect(config.mqtt.password?.value == expected)
        }
    }

    @Test func relativePasswordFileIsRelativeToTheConfig() throws {
        let file = try TemporaryFile("pw\n")
        defer { file.remove() }
        let name = String(file.path.split(separator: "/").last!)
        #expect(try config("mqtt:\n  username: u\n  password_file: \(name)\n", file: "/tmp/config.yaml").mqtt.password?.value == "pw")
        #expect(issues("mqtt:\n  username: u\n  password_file: \(name)\n", file: "/etc/gattbridge/config.yaml") == [
            "/etc/gattbridge/config.yaml:3:18: cannot read password_file \"/etc/gattbridge/\(name)\": No such file or directory",
        ])
    }

    @Test func passwordProblems() throws {
        let empty = try TemporaryFile("\n")
        defer { empty.remove() }
        #expect(issues("mqtt:\n  username: u\n  password_file: \(empty.path)\n") == [
            "config.yaml:3:18: password_file \"\(empty.path)\" is empty",
        ])
        #expect(issues("mqtt:\n  username: u\n  password: a\n  password_file: /x\n") == [
            "config.yaml:4:3: mqtt has both password and password_file; use one (password_file is preferred)",
        ])
        #expect(issues("mqtt:\n  password: a\n") == ["config.yaml:2:3: a password needs a username in mqtt"])
        #expect(try config("mqtt:\n  username: u\n  password: 12345\n").mqtt.password?.value == "12345")
    }

    @Test func secretsNeverLeak() throws {
        let secret = "Sup3r-S3cret-Passw0rd"
        let file = try TemporaryFile(secret + "\n")
        defer { file.remove() }
        let config = try config("mqtt:\n  username: bridge\n  password_file: \(file.path)\n\(oneDevice)")
        #expect(config.mqtt.password?.value == secret)
        var dumped = ""
        dump(config, to: &dumped)
        for text in [String(describing: config), String(reflecting: config), "\(config.mqtt)", String(reflecting: config.mqtt),
                     dumped, "\(config.mqtt.password!)"] {
            #expect(!text.contains(secret), "leaked in: \(text)")
        }
        #expect("\(config.mqtt)".contains("password <redacted>"))

        // Errors around an inline password do not echo it.
        let errors = issues("mqtt:\n  username: bridge\n  password: \(secret)\n  pasword: \(secret)\n")
            + issues("mqtt:\n  password: [\(secret)]\n") + issues("mqtt:\n  password: {\(secret): 1}\n")
        #expect(!errors.isEmpty)
        #expect(errors.allSatisfy { !$0.contains(secret) }, "\(errors)")
    }

    @Test func portDefaultsTo8883WithTLS() throws {
        #expect(try config("mqtt:\n  tls: { ca_file: /etc/ca.pem }\n").mqtt.port == 8883)
        #expect(try config("mqtt:\n  tls: true\n").mqtt == MQTTSettings(tls: TLSSettings()))
        #expect(try config("mqtt:\n  tls: false\n").mqtt.tls == nil)
        #expect(try config("mqtt:\n  tls: {}\n  port: 1884\n").mqtt.port == 1884)
    }

    @Test func tlsRules() {
        #expect(issues("mqtt:\n  tls: { cert_file: /c.pem }\n") == [
            "config.yaml:2:10: cert_file and key_file in mqtt.tls must be given together",
        ])
        #expect(issues("mqtt:\n  tls: { insecure: yes, ca: x }\n") == [
            "config.yaml:2:20: insecure in mqtt.tls must be true or false, got \"yes\" (YAML 1.2 reads this as a string)",
            "config.yaml:2:25: unknown key \"ca\" in mqtt.tls",
        ])
        #expect(issues("mqtt:\n  tls: on\n") == ["config.yaml:2:8: mqtt.tls must be a mapping of keys to values, got \"on\""])
    }

    @Test func protocolAcceptsBothVersionsQuotedOrNot() throws {
        #expect(try config("mqtt:\n  protocol: 5\n").mqtt.protocolVersion == .v5)
        #expect(try config("mqtt:\n  protocol: \"3.1.1\"\n").mqtt.protocolVersion == .v311)
        #expect(try config("mqtt:\n  protocol: 3.1.1\n").mqtt.protocolVersion == .v311)
        #expect(issues("mqtt:\n  protocol: 4\n") == ["config.yaml:2:13: protocol in mqtt must be one of 5, 3.1.1, got \"4\" (did you mean \"5\"?)"])
    }

    @Test func typeAndRangeErrors() {
        #expect(issues("mqtt:\n  port: abc\n") == ["config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got \"abc\""])
        #expect(issues("mqtt:\n  port: \"1883\"\n") == [
            "config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got the quoted string \"1883\" (remove the quotes)",
        ])
        #expect(issues("mqtt:\n  port: 0\n") == ["config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got 0"])
        #expect(issues("mqtt:\n  port: 70000\n") == ["config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got 70000"])
        #expect(issues("mqtt:\n  port: 1883.5\n") == ["config.yaml:2:9: port in mqtt must be an integer from 1 to 65535, got \"1883.5\""])
        #expect(issues("mqtt:\n  keepalive: 2\n") == ["config.yaml:2:14: keepalive in mqtt must be an integer from 5 to 65535, got 2"])
        #expect(issues("mqtt:\n  host: [a]\n") == ["config.yaml:2:9: host in mqtt must be a string, got a list"])
        #expect(issues("mqtt:\n  host:\n") == ["config.yaml:2:8: host in mqtt must be a string, got nothing (null)"])
        #expect(issues("mqtt:\n  host: \"\"\n") == ["config.yaml:2:9: host in mqtt must not be empty"])
        #expect(issues("mqtt: 5\n") == ["config.yaml:1:7: mqtt must be a mapping of keys to values, got \"5\""])
    }

    @Test func topicPrefixes() throws {
        #expect(try config("mqtt:\n  base_topic: home/ble\n").mqtt.baseTopic == "home/ble")
        for bad in ["a/+/b", "#", "/a", "a/", "a//b", "$SYS"] {
            #expect(issues("mqtt:\n  base_topic: \"\(bad)\"\n") == [
                "config.yaml:2:15: base_topic in mqtt must be an MQTT topic without wildcards (+ #), control characters, noncharacters, a leading $ or empty levels, got \"\(bad)\"",
            ])
        }
        #expect(issues("homeassistant:\n  discovery_prefix: \"ha/#\"\n  enabled: 1\n") == [
            "config.yaml:2:21: discovery_prefix in homeassistant must be an MQTT topic without wildcards (+ #), control characters, noncharacters, a leading $ or empty levels, got \"ha/#\"",
            "config.yaml:3:12: enabled in homeassistant must be true or false, got \"1\"",
        ])
    }

    @Test func duplicateYAMLKeysAreErrors() {
        #expect(issues("mqtt:\n  port: 1\n  host: a\n  port: 2\n") == ["config.yaml:4:3: duplicate key \"port\" in mqtt (first at 2:3)"])
        #expect(issues("mqtt: {}\nmqtt: {}\n") == ["config.yaml:2:1: duplicate key \"mqtt\" in the top level (first at 1:1)"])
    }
}
