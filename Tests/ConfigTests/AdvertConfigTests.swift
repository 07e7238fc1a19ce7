import Adverts
import Codecs
import Foundation
import Testing
@testable import Config

/// The `adverts:` section and a device's `advert`, `bindkey_file` and `bindkey` (docs/configuration.md#adverts).
@Suite struct AdvertConfigTests {
    static let key = "0123456789abcdef0123456789ABCDEF"

    /// A passive device with `extra` keys (indented as device keys, the first at line 6, column 5) after adverts
    /// are enabled.
    private func passive(_ extra: String...) -> String {
        var lines = ["adverts:", "  enabled: true", "devices:", "  - name: thermo", "    address: \"A4:C1:38:00:00:01\""]
        lines += extra.map { "    " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: adverts:

    @Test func advertsDefaultToOff() throws {
        let settings = try config("").adverts
        #expect(settings == AdvertSettings())
        #expect(!settings.enabled && settings.auto.isEmpty && settings.autoLimit == 100 && settings.timeout == .seconds(900))
        #expect(try config("adverts:\n").adverts == AdvertSettings())
        #expect(try config("adverts:\n  auto:\n").adverts.auto == [])
    }

    @Test func advertsSectionIsRead() throws {
        let settings = try config("adverts: {enabled: true, auto: [bthome, xiaomi, ruuvi], auto_limit: 0, timeout: 90.5}\n").adverts
        #expect(settings == AdvertSettings(enabled: true, auto: [.bthome, .xiaomi, .ruuvi], autoLimit: 0,
                                           timeout: .milliseconds(90_500)))
        #expect(try config("adverts:\n  auto: [\(AdvertFormat.allCases.map(\.rawValue).joined(separator: ", "))]\n")
            .adverts.auto == AdvertFormat.allCases)
        #expect(try config("adverts:\n  auto_limit: 10000\n").adverts.autoLimit == 10_000)
    }

    @Test func badAdvertsSettingsNameFileLineAndKey() {
        let formats = "bthome, xiaomi, pvvx, atc, govee, ruuvi, ibeacon, eddystone"
        #expect(issues("adverts:\n  enabled: yes\n") == [
            "config.yaml:2:12: enabled in adverts must be true or false, got \"yes\" (YAML 1.2 reads this as a string)",
        ])
        #expect(issues("adverts:\n  auto: bthome\n") == [
            "config.yaml:2:9: auto in adverts must be a list of formats (\(formats)), got \"bthome\"",
        ])
        #expect(issues("adverts:\n  auto: [bthome, xiaomy]\n") == [
            "config.yaml:2:18: auto in adverts must be one of \(formats), got \"xiaomy\" (did you mean \"xiaomi\"?)",
        ])
        #expect(issues("adverts:\n  auto: [bthome, govee, bthome]\n") == [
            "config.yaml:2:25: duplicate format \"bthome\" in auto of adverts (first at 2:10)",
        ])
        #expect(issues("adverts:\n  auto_limit: -1\n") == [
            "config.yaml:2:15: auto_limit in adverts must be an integer from 0 to 10000, got -1",
        ])
        #expect(issues("adverts:\n  auto_limit: 10001\n") == [
            "config.yaml:2:15: auto_limit in adverts must be an integer from 0 to 10000, got 10001",
        ])
        #expect(issues("adverts:\n  timeout: 0\n") == [
            "config.yaml:2:12: timeout in adverts must be \(Seconds.expectation), got 0",
        ])
        #expect(issues("adverts:\n  timeout: \"900\"\n") == [
            "config.yaml:2:12: timeout in adverts must be \(Seconds.expectation), got the quoted string \"900\" (remove the quotes)",
        ])
        #expect(issues("adverts:\n  auto_limt: 5\n") == [
            "config.yaml:2:3: unknown key \"auto_limt\" in adverts (did you mean \"auto_limit\"?)",
        ])
        #expect(issues("advert:\n  enabled: true\n") == [
            "config.yaml:1:1: unknown key \"advert\" in the top level (did you mean \"adverts\"?)",
        ])
        #expect(issues("adverts: true\n") == [
            "config.yaml:1:10: adverts must be a mapping of keys to values, got \"true\"",
        ])
    }

    // MARK: devices

    @Test func aDeviceWithAdvertNeedsNoChannels() throws {
        let device = try config(passive("advert: bthome")).devices[0]
        #expect(device.advert == .format(.bthome))
        #expect(device.channels.isEmpty && device.isPassive)
        #expect(device.bindkey == nil && device.bindkeyFile == nil)
        #expect(try config(passive("advert: auto")).devices[0].advert == .auto)
        let both = try config(passive("advert: xiaomi", "channels:", "  - {name: battery, characteristic: \"2a19\", codec: battery_level}")).devices[0]
        #expect(both.advert == .format(.xiaomi) && both.channels.count == 1 && !both.isPassive)
        #expect(try config(oneDevice).devices[0].advert == nil)
    }

    @Test func aDeviceWithNeitherChannelsNorAdvertIsStillAnError() {
        #expect(issues(passive()) == ["config.yaml:4:5: device \"thermo\" is missing required key \"channels\""])
        #expect(issues(passive("advert: bthome", "channels: []")) == ["config.yaml:7:15: device \"thermo\" has no channels"])
    }

    @Test func badAdvertKeysNameFileLineAndKey() {
        #expect(issues(passive("advert: bthom")) == [
            "config.yaml:6:13: advert in device \"thermo\" must be one of auto, bthome, xiaomi, pvvx, atc, govee, ruuvi, "
                + "ibeacon, eddystone, got \"bthom\" (did you mean \"bthome\"?)",
        ])
        #expect(issues(passive("advert: [bthome]")) == [
            "config.yaml:6:13: advert in device \"thermo\" must be a string, got a list",
        ])
        #expect(issues(passive("advrt: bthome")) == [
            "config.yaml:4:5: device \"thermo\" is missing required key \"channels\"",
            "config.yaml:6:5: unknown key \"advrt\" in device \"thermo\" (did you mean \"advert\"?)",
        ])
        #expect(issues(passive("advert: bthome", "bindkey_fle: k")) == [
            "config.yaml:7:5: unknown key \"bindkey_fle\" in device \"thermo\" (did you mean \"bindkey_file\"?)",
        ])
    }

    @Test func aBindkeyNeedsAdvert() {
        #expect(issues(passive("bindkey: \(Self.key)", "channels: [{name: c, characteristic: \"2a19\", codec: hex}]")) == [
            "config.yaml:6:5: bindkey in device \"thermo\" needs advert: (the format of its broadcasts, or auto)",
        ])
        #expect(issues(passive("channels: [{name: c, characteristic: \"2a19\", codec: hex}]", "bindkey_file: k")) == [
            "config.yaml:7:5: bindkey_file in device \"thermo\" needs advert: (the format of its broadcasts, or auto)",
        ])
        #expect(issues(passive("advert: pvvx", "bindkey: \(Self.key)")) == [
            "config.yaml:7:5: bindkey in device \"thermo\" is of no use with advert: pvvx (only bthome and xiaomi "
                + "broadcasts are encrypted)",
        ])
        #expect(issues(passive("advert: bthome", "bindkey: \(Self.key)", "bindkey_file: k")) == [
            "config.yaml:8:5: device \"thermo\" has both bindkey and bindkey_file; use one (bindkey_file is preferred)",
        ])
    }

    @Test func inlineBindkeyIsReadAndABadOneNeverEchoed() throws {
        let device = try config(passive("advert: bthome", "bindkey: \"\(Self.key)\"")).devices[0]
        #expect(device.bindkey == Bindkey(hex: Self.key))
        #expect(device.bindkeyFile == nil)
        for bad in ["0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef0",
                    "\"\"", "12"] {
            let found = issues(passive("advert: bthome", "bindkey: \(bad)"))
            #expect(found == ["config.yaml:7:14: bindkey in device \"thermo\" must be 32 hex digits"], "\(bad)")
            #expect(!found.joined().contains("0123456789"))
        }
    }

    @Test func bindkeyFileIsReadAndResolvedLikePasskeyFile() throws {
        let file = try TemporaryFile(Self.key + "\n", name: "bindkey")
        defer { file.remove() }
        let device = try config(passive("advert: xiaomi", "bindkey_file: \(file.path)")).devices[0]
        #expect(device.bindkey == Bindkey(hex: Self.key))
        #expect(device.bindkeyFile?.path == file.path)
        let name = String(file.path.split(separator: "/").last!)
        #expect(try config(passive("advert: xiaomi", "bindkey_file: \(name)"), file: "/tmp/config.yaml")
            .devices[0].bindkey == Bindkey(hex: Self.key))
    }

    @Test func badBindkeyFilesNameFileLineAndKeyNeverTheContent() throws {
        let secret = "0123456789abcdef0123456789abcdeZ"
        let file = try TemporaryFile(secret + "\n", name: "badkey")
        defer { file.remove() }
        let found = issues(passive("advert: bthome", "bindkey_file: \(file.path)"))
        #expect(found == ["config.yaml:7:19: bindkey_file \"\(file.path)\" must hold 32 hex digits"])
        #expect(!found.joined().contains("0123456789"))
        #expect(issues(passive("advert: bthome", "bindkey_file: /nonexistent/key")) == [
            "config.yaml:7:19: cannot read bindkey_file \"/nonexistent/key\": No such file or directory",
        ])
        #expect(issues(passive("advert: bthome", "bindkey_file: /tmp")) == [
            "config.yaml:7:19: cannot read bindkey_file \"/tmp\": not a regular file (a directory)",
        ])
        #expect(issues(passive("advert: bthome", "bindkey_file: \"\"")) == [
            "config.yaml:7:19: bindkey_file in device \"thermo\" must not be empty",
        ])
    }

    @Test func theBindkeyNeverPrints() throws {
        let device = try config(passive("advert: bthome", "bindkey: \(Self.key)")).devices[0]
        var dumped = ""
        dump(device, to: &dumped)
        for text in ["\(device)", String(reflecting: device), dumped] {
            #expect(!text.lowercased().contains("0123456789abcdef"))
            // The bytes 01 23 45 67 in decimal, as an array prints them or dump lists them.
            #expect(!text.contains("1, 35, 69, 103"))
            #expect(!text.contains("- 35\n"))
        }
    }

    @Test func aChangedAdvertOrBindkeyIsAChangedDevice() throws {
        let plain = try config(passive("advert: bthome")).devices[0]
        #expect(plain == (try config(passive("advert: bthome")).devices[0]))
        #expect(plain != (try config(passive("advert: auto")).devices[0]))
        let keyed = try config(passive("advert: bthome", "bindkey: \(Self.key)")).devices[0]
        #expect(plain != keyed)
        let other = try config(passive("advert: bthome", "bindkey: \(String(Self.key.reversed()))")).devices[0]
        #expect(keyed != other)
    }

    // MARK: warnings

    private func warnings(_ yaml: String) throws -> [String] {
        try config(yaml).warnings(file: "config.yaml").map(\.description)
    }

    @Test func anInlineBindkeyIsWarnedAbout() throws {
        let found = try warnings(passive("advert: bthome", "bindkey: \(Self.key)"))
        #expect(found == [
            "config.yaml: warning: device \"thermo\" has its bindkey in the config file; put it in a bindkey_file "
                + "readable by its owner only",
        ])
        #expect(!found.joined().contains(Self.key))
        #expect(try warnings(passive("advert: bthome")) == [])
    }

    @Test func aBindkeyFileOthersCanReadIsWarnedAbout() throws {
        let file = try TemporaryFile(Self.key, name: "bindkey")
        defer { file.remove() }
        let yaml = passive("advert: bthome", "bindkey_file: \(file.path)")
        chmod(file.path, 0o644)
        #expect(try warnings(yaml) == [
            "config.yaml: warning: bindkey_file \"\(file.path)\" of device \"thermo\" is accessible to group or others "
                + "(mode 0644); make it readable by its owner only (chmod 600)",
        ])
        chmod(file.path, 0o600)
        #expect(try warnings(yaml) == [])
    }

    @Test func advertDevicesWhileAdvertsAreOffAreWarnedAbout() throws {
        let one = passive("advert: bthome").replacingOccurrences(of: "enabled: true", with: "enabled: false")
        #expect(try warnings(one) == [
            "config.yaml: warning: device \"thermo\" has advert: but adverts.enabled is false, so its broadcasts are "
                + "never listened to; set adverts: {enabled: true}",
        ])
        let two = """
            devices:
              - {name: a, address: "A4:C1:38:00:00:01", advert: bthome}
              - {name: b, address: "A4:C1:38:00:00:02", advert: auto, channels: [{name: c, characteristic: "2a19", codec: hex}]}
            """ + "\n" + oneDevice.replacingOccurrences(of: "devices:\n", with: "")
        #expect(try warnings(two) == [
            "config.yaml: warning: devices \"a\", \"b\" have advert: but adverts.enabled is false, so their broadcasts are "
                + "never listened to; set adverts: {enabled: true}",
        ])
        #expect(try warnings("adverts: {enabled: false}\n" + oneDevice) == [])
    }

    // MARK: devices added over the bridge API

    @Test func aDeviceFromTheAPIMayBePassiveWithABindkeyFileInTheSecretsDirectory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("advert-api-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let secrets = root.appendingPathComponent("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try (Self.key + "\n").write(to: secrets.appendingPathComponent("thermo.key"), atomically: true, encoding: .utf8)
        try (Self.key + "\n").write(to: root.appendingPathComponent("outside.key"), atomically: true, encoding: .utf8)

        func validate(_ text: String) throws(ConfigErrors) -> DeviceConfig {
            let object = try! JSONValue.parse(text)
            return try ConfigLoader.validateDevice(json: object, file: "/s/thermo.yaml", existing: [], secretsDir: secrets.path)
        }
        let plain = try validate(#"{"name":"thermo","address":"A4:C1:38:00:00:01","advert":"pvvx"}"#)
        #expect(plain.isPassive && plain.advert == .format(.pvvx) && plain.source.kind == .api)
        let keyed = try validate(#"{"name":"thermo","address":"A4:C1:38:00:00:01","advert":"bthome","bindkey_file":"thermo.key"}"#)
        #expect(keyed.bindkey == Bindkey(hex: Self.key))
        #expect(keyed.bindkeyFile?.path.hasSuffix("/secrets/thermo.key") == true)

        for path in ["../outside.key", root.appendingPathComponent("outside.key").path, "/etc/hostname", "missing.key"] {
            do throws(ConfigErrors) {
                _ = try validate(#"{"name":"thermo","address":"A4:C1:38:00:00:01","advert":"bthome","bindkey_file":"\#(path)"}"#)
                Issue.record("accepted \(path)")
            } catch {
                #expect(error.issues.map(\.description) == [
                    "bindkey_file: bindkey_file in device \"thermo\" must name a file in the secrets directory \(secrets.path) (secrets_dir)",
                ])
            }
        }
        do throws(ConfigErrors) {
            _ = try validate(#"{"name":"thermo","address":"A4:C1:38:00:00:01","advert":"bthome","bindkey":"nothex"}"#)
            Issue.record("accepted a bad bindkey")
        } catch {
            #expect(error.issues.map(\.description) == ["bindkey: bindkey in device \"thermo\" must be 32 hex digits"])
        }
    }

    @Test func aDropInMayBePassive() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("advert-dropin-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let dropIns = root.appendingPathComponent("state/devices.d")
        try FileManager.default.createDirectory(at: dropIns, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("secrets"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try (Self.key + "\n").write(to: root.appendingPathComponent("secrets/plant.key"), atomically: true, encoding: .utf8)
        try (Self.key + "\n").write(to: root.appendingPathComponent("main.key"), atomically: true, encoding: .utf8)
        let main = root.appendingPathComponent("config.yaml")
        try """
            state_dir: state
            secrets_dir: secrets
            adverts: {enabled: true}
            devices:
              - {name: main, address: "A4:C1:38:00:00:01", advert: bthome, bindkey_file: main.key}
            """.write(to: main, atomically: true, encoding: .utf8)
        try #"{"name": "plant", "address": "C4:7C:8D:00:00:01", "advert": "xiaomi", "bindkey_file": "plant.key"}"#
            .write(to: dropIns.appendingPathComponent("plant.yaml"), atomically: true, encoding: .utf8)
        // A drop-in may not reach outside the secrets directory, though the main file may.
        try #"{"name": "sly", "address": "C4:7C:8D:00:00:02", "advert": "xiaomi", "bindkey_file": "../main.key"}"#
            .write(to: dropIns.appendingPathComponent("sly.yaml"), atomically: true, encoding: .utf8)
        let loaded = try ConfigLoader.loadWithDropIns(path: main.path)
        #expect(loaded.config.devices.map(\.name) == ["main", "plant"])
        #expect(loaded.config.devices.allSatisfy { $0.isPassive && $0.bindkey == Bindkey(hex: Self.key) })
        #expect(loaded.skipped.map(\.description) == [
            "\(dropIns.path)/sly.yaml:1:85: bindkey_file in device \"sly\" must name a file in the secrets directory "
                + "\(root.path)/secrets (secrets_dir)",
        ])
    }
}
