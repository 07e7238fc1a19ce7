import Bluetooth
import Glibc
import Testing
@testable import Config

/// The `esphome_proxy:` section (docs/configuration.md#esphome_proxy): off by default, encrypted when on, plaintext
/// only on loopback, a node name that follows ESPHome's rule.
@Suite struct ESPHomeProxyConfigTests {
    @Test func defaults() throws {
        let parsed = try config("bridge:\n  id: kitchen\n")
        let proxy = parsed.esphomeProxy
        #expect(!proxy.enabled)
        #expect(proxy.listen == WebListen(host: "0.0.0.0", port: 6053))
        #expect(proxy.name == "kitchen")
        #expect(proxy.encryption)
        #expect(proxy.encryptionKey == nil && proxy.encryptionKeyFile == nil)
        #expect(proxy.connectionSlots == 3)
        #expect(proxy.passkeys.isEmpty)
        // Enabled alone is a valid, encrypted setup (the key comes from the state directory at start).
        #expect(issues("esphome_proxy:\n  enabled: true\n") == [])
        #expect(try config("esphome_proxy: {enabled: true}\n").esphomeProxy.encryption)
    }

    @Test func theNameIsDerivedFromTheBridgeID() throws {
        #expect(ESPHomeProxySettings.deviceName(from: "Living Room Pi!") == "living-room-pi-")
        #expect(ESPHomeProxySettings.deviceName(from: "a__b") == "a--b")
        #expect(ESPHomeProxySettings.deviceName(from: "Küche") == "k-che")
        #expect(ESPHomeProxySettings.deviceName(from: String(repeating: "x", count: 40)) == String(repeating: "x", count: 31))
        // bridge.id is a topic level, so it may hold spaces and capitals: the name follows the rule anyway.
        let parsed = try config("bridge:\n  id: Garden Shed_2\nesphome_proxy:\n  enabled: true\n")
        #expect(parsed.esphomeProxy.name == "garden-shed-2")
        // Without a bridge: section, the host name (what bridge.id defaults to).
        #expect(try config("").esphomeProxy.name == ESPHomeProxySettings.deviceName(from: FleetSettings.defaultID))
        #expect(try config("esphome_proxy:\n  name: pi-proxy\n").esphomeProxy.name == "pi-proxy")
    }

    @Test func anExplicitNameMustAlreadyFollowTheRule() {
        #expect(issues("esphome_proxy:\n  name: Pi Proxy\n") == [
            "config.yaml:2:9: name in esphome_proxy must be at most 31 characters a-z, 0-9 and -, got \"Pi Proxy\" "
                + "(perhaps \"pi-proxy\")",
        ])
        let long = String(repeating: "a", count: 32)
        #expect(issues("esphome_proxy:\n  name: \(long)\n").first?.hasPrefix("config.yaml:2:9: name in esphome_proxy") == true)
        #expect(issues("esphome_proxy:\n  name: \"\"\n") == ["config.yaml:2:9: name in esphome_proxy must not be empty"])
    }

    @Test func plaintextOnlyOnLoopback() throws {
        #expect(issues("esphome_proxy:\n  enabled: true\n  encryption: false\n") == [
            "config.yaml:3:15: esphome_proxy listens on 0.0.0.0:6053, which is not a loopback address: it needs "
                + "encryption (anyone on the network could use the adapters through an unencrypted proxy)",
        ])
        #expect(issues("esphome_proxy:\n  enabled: true\n  encryption: false\n  listen: \"[::]:6053\"\n").count == 1)
        let local = try config("esphome_proxy:\n  enabled: true\n  encryption: false\n  listen: \"127.0.0.1:6053\"\n")
        #expect(!local.esphomeProxy.encryption && local.esphomeProxy.listen.isLoopback)
        #expect(issues("esphome_proxy:\n  enabled: true\n  encryption: false\n  listen: \"[::1]:6053\"\n") == [])
        // A disabled proxy listens nowhere.
        #expect(issues("esphome_proxy:\n  encryption: false\n") == [])
    }

    @Test func badValuesNameTheirPlace() {
        #expect(issues("esphome_proxy:\n  listen: \"6053\"\n") == [
            "config.yaml:2:11: listen in esphome_proxy must be HOST:PORT or [IPv6]:PORT with a port 1-65535, got \"6053\"",
        ])
        #expect(issues("esphome_proxy:\n  connection_slots: 0\n") == [
            "config.yaml:2:21: connection_slots in esphome_proxy must be an integer from 1 to 8, got 0",
        ])
        #expect(issues("esphome_proxy:\n  connection_slots: 9\n").count == 1)
        #expect(issues("esphome_proxy:\n  enabled: yes\n").first?.hasPrefix("config.yaml:2:12: enabled in esphome_proxy must be true or false") == true)
        let unknown = issues("esphome_proxy:\n  port: 6053\n")
        #expect(unknown.count == 1 && unknown[0].hasPrefix("config.yaml:2:3: unknown key \"port\""), "\(unknown)")
        #expect(issues("esphome_proxy: 1\n") == ["config.yaml:1:16: esphome_proxy must be a mapping of keys to values, got \"1\""])
    }

    @Test func theKeyFileIsReadAtLoadAndNeverEchoed() throws {
        let key = try TemporaryFile("  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")
        defer { key.remove() }
        let parsed = try config("esphome_proxy:\n  enabled: true\n  encryption_key_file: \(key.path)\n")
        #expect(parsed.esphomeProxy.encryptionKey?.bytes == Array(0..<32))
        #expect(parsed.esphomeProxy.encryptionKeyFile?.path == key.path)
        #expect(!"\(parsed.esphomeProxy)".contains("AAEC"))

        let short = try TemporaryFile("c2VjcmV0LXRleHQ=\n")    // "secret-text": 11 bytes
        defer { short.remove() }
        let found = issues("esphome_proxy:\n  encryption_key_file: \(short.path)\n")
        #expect(found == [
            "config.yaml:2:24: encryption_key_file \"\(short.path)\" must hold a key of 32 bytes in base64 (44 characters, "
                + "as `gattbridge esphome-key --new` prints)",
        ])
        #expect(!found.joined().contains("c2Vj"))
        #expect(issues("esphome_proxy:\n  encryption_key_file: /nonexistent/key\n").first?.hasPrefix(
            "config.yaml:2:24: cannot read encryption_key_file \"/nonexistent/key\"") == true)
        #expect(issues("esphome_proxy:\n  encryption: false\n  encryption_key_file: \(key.path)\n") == [
            "config.yaml:3:3: esphome_proxy has encryption: false and encryption_key_file; drop one",
        ])
    }

    @Test func passkeysAreFilesUnderTheSecretsDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("lock.passkey", "012345\n")
        try directory.write("bad.passkey", "12ab\n")
        let yaml = { (entries: String) in
            "secrets_dir: \(directory.path)\nesphome_proxy:\n  passkeys:\n\(entries)"
        }
        let parsed = try config(yaml("    \"c0:ff:ee:00:00:05\": lock.passkey\n"))
        let address = BluetoothAddress("C0:FF:EE:00:00:05")!
        #expect(parsed.esphomeProxy.passkeys[address]?.number == 12345)
        #expect(parsed.esphomeProxy.passkeys[address]?.file.path == SecretsDirectory.realPath(directory.path)! + "/lock.passkey")
        #expect(!"\(parsed.esphomeProxy)".contains("012345"))

        #expect(issues(yaml("    \"C0:FF:EE:00:00:05\": /etc/passwd\n")) == [
            "config.yaml:4:26: passkey_file in esphome_proxy.passkeys C0:FF:EE:00:00:05 must name a file in the secrets "
                + "directory \(directory.path) (secrets_dir)",
        ])
        #expect(issues(yaml("    \"C0:FF:EE:00:00:05\": bad.passkey\n")) == [
            "config.yaml:4:26: passkey_file \"\(SecretsDirectory.realPath(directory.path)!)/bad.passkey\" must hold six digits",
        ])
        #expect(issues(yaml("    lock: lock.passkey\n")) == [
            "config.yaml:4:5: keys in esphome_proxy.passkeys must be Bluetooth addresses like \"AA:BB:CC:DD:EE:FF\", got \"lock\"",
        ])
        #expect(issues(yaml("    \"C0:FF:EE:00:00:05\": lock.passkey\n    \"c0:ff:ee:00:00:05\": lock.passkey\n")) == [
            "config.yaml:5:5: duplicate address C0:FF:EE:00:00:05 in esphome_proxy.passkeys",
        ])
        #expect(issues("esphome_proxy:\n  passkeys: [a]\n").first?.hasPrefix("config.yaml:2:13: passkeys in esphome_proxy must be a mapping") == true)
    }

    @Test func aKeyFileOthersCanReadIsWarnedAbout() throws {
        let key = try TemporaryFile("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n")
        defer { key.remove() }
        chmod(key.path, 0o644)
        let parsed = try config("esphome_proxy:\n  encryption_key_file: \(key.path)\n")
        #expect(parsed.warnings(file: "config.yaml").map(\.description) == [
            "config.yaml: warning: encryption_key_file \"\(key.path)\" is accessible to group or others (mode 0644); "
                + "make it readable by its owner only (chmod 600)",
        ])
    }
}

/// A fresh directory under /tmp, removed with what it holds by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/gattbridge-config-test-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TemporaryFileError()
        }
        path = String(cString: made)
    }

    func write(_ name: String, _ contents: String) throws {
        guard let handle = fopen(path + "/" + name, "w") else { throw TemporaryFileError() }
        fputs(contents, handle)
        fclose(handle)
    }

    func remove() {
        guard let directory = opendir(path) else { return }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { unlink(path + "/" + name) }
        }
        closedir(directory)
        rmdir(path)
    }
}
