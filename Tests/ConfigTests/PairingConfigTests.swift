import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

@Suite struct PairingConfigTests {
    /// One device with the given extra keys (indented as device keys); they start at line 4.
    private func deviceYAML(_ extra: String...) -> String {
        var lines = ["devices:", "  - name: lock", "    address: \"C0:FF:EE:00:00:05\""]
        lines += extra.map { "    " + $0 }
        lines += ["    channels:", "      - name: state", "        characteristic: \"2a19\"", "        codec: hex"]
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func pairingDefaultsToNone() throws {
        let device = try config(deviceYAML()).devices[0]
        #expect(device.pairing == .none)
        #expect(try config("").bluetooth.defaultAgent == false)
    }

    @Test func justWorksAndInlinePasskey() throws {
        #expect(try config(deviceYAML("pairing: just_works")).devices[0].pairing.mode == .justWorks)
        let pairing = try config(deviceYAML("pairing: passkey", "passkey: 012345")).devices[0].pairing
        #expect(pairing.mode == .passkey)
        #expect(pairing.passkeyNumber == 12345)
        #expect(pairing.passkeyFile == nil)
    }

    @Test func passkeyFileIsReadAndResolvedLikePasswordFile() throws {
        let file = try TemporaryFile("654321\n", name: "passkey")
        defer { file.remove() }
        let pairing = try config(deviceYAML("pairing: passkey", "passkey_file: \(file.path)")).devices[0].pairing
        #expect(pairing.passkeyNumber == 654321)
        #expect(pairing.passkeyFile?.path == file.path)
        let name = String(file.path.split(separator: "/").last!)
        #expect(try config(deviceYAML("pairing: passkey", "passkey_file: \(name)"), file: "/tmp/config.yaml")
            .devices[0].pairing.passkeyNumber == 654321)
    }

    @Test func badPairingSettingsNameTheirPlaceAndNeverTheSecret() throws {
        #expect(issues(deviceYAML("pairing: pin")) == [
            "config.yaml:4:14: pairing in device \"lock\" must be one of none, just_works, passkey, got \"pin\"",
        ])
        #expect(issues(deviceYAML("pairing: passkey")) == [
            "config.yaml:4:5: device \"lock\" has pairing: passkey but neither passkey_file nor passkey",
        ])
        #expect(issues(deviceYAML("passkey: 123456")) == [
            "config.yaml:4:5: passkey in device \"lock\" needs pairing: passkey",
        ])
        #expect(issues(deviceYAML("pairing: just_works", "passkey_file: /x")) == [
            "config.yaml:5:5: passkey_file in device \"lock\" needs pairing: passkey",
        ])
        let wrong = issues(deviceYAML("pairing: passkey", "passkey: 98765x"))
        #expect(wrong == ["config.yaml:5:14: passkey in device \"lock\" must be six digits"])
        #expect(!wrong.joined().contains("98765"))
        #expect(issues(deviceYAML("pairing: passkey", "passkey: 1234567")) == [
            "config.yaml:5:14: passkey in device \"lock\" must be six digits",
        ])
        #expect(issues(deviceYAML("pairing: passkey", "passkey: 123456", "passkey_file: /x")) == [
            "config.yaml:6:5: device \"lock\" has both passkey and passkey_file; use one (passkey_file is preferred)",
        ])
        let file = try TemporaryFile("12345\n", name: "short")
        defer { file.remove() }
        let short = issues(deviceYAML("pairing: passkey", "passkey_file: \(file.path)"))
        #expect(short == ["config.yaml:5:19: passkey_file \"\(file.path)\" must hold six digits"])
        #expect(issues(deviceYAML("pairing: passkey", "passkey_file: /nonexistent/pk")) == [
            "config.yaml:5:19: cannot read passkey_file \"/nonexistent/pk\": No such file or directory",
        ])
    }

    @Test func aChangedPairingIsAChangedDevice() throws {
        let plain = try config(deviceYAML()).devices[0]
        let paired = try config(deviceYAML("pairing: just_works")).devices[0]
        #expect(plain != paired)
    }

    @Test func passkeyNeverPrints() throws {
        let device = try config(deviceYAML("pairing: passkey", "passkey: 424242")).devices[0]
        #expect(!"\(device)".contains("424242"))
        var dumped = ""
        dump(device, to: &dumped)
        #expect(!dumped.contains("424242"))
    }

    @Test func inlinePasskeyAndOpenPasskeyFileAreWarnings() throws {
        let inline = try config(deviceYAML("pairing: passkey", "passkey: 424242")).warnings(file: "config.yaml")
        #expect(inline.map(\.description) == [
            "config.yaml: warning: device \"lock\" has its passkey in the config file; put it in a passkey_file "
                + "readable by its owner only",
        ])
        let file = try TemporaryFile("424242\n", name: "open")
        defer { file.remove() }
        chmod(file.path, 0o644)
        let open = try config(deviceYAML("pairing: passkey", "passkey_file: \(file.path)")).warnings(file: "config.yaml")
        #expect(open.map(\.description) == [
            "config.yaml: warning: passkey_file \"\(file.path)\" of device \"lock\" is accessible to group or others "
                + "(mode 0644); make it readable by its owner only (chmod 600)",
        ])
        chmod(file.path, 0o600)
        #expect(try config(deviceYAML("pairing: passkey", "passkey_file: \(file.path)")).warnings(file: "c").isEmpty)
    }

    @Test func defaultAgentIsABluetoothKey() throws {
        #expect(try config("bluetooth:\n  default_agent: true\n").bluetooth.defaultAgent)
        #expect(issues("bluetooth:\n  default_agent: yes\n") == [
            "config.yaml:2:18: default_agent in bluetooth must be true or false, got \"yes\" (YAML 1.2 reads this as a string)",
        ])
    }
}
