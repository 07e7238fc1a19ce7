import Bluetooth
import Codecs
import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

/// A temporary state directory with a main config pointing at it; removed by `remove()`.
private struct StateFixture {
    let root: String
    var configPath: String { root + "/config.yaml" }
    var stateDir: String { root + "/state" }
    var dropIns: String { stateDir + "/devices.d" }

    init(main: String) throws {
        var template = Array("/tmp/gattbridge-dropin-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TemporaryFileError() }
        root = String(cString: made)
        try write(configPath, "state_dir: state\n" + main)
    }

    func write(_ path: String, _ text: String) throws {
        mkdir(stateDir, 0o755)
        mkdir(dropIns, 0o755)
        guard let handle = fopen(path, "w") else { throw TemporaryFileError() }
        fputs(text, handle)
        fclose(handle)
    }

    func dropIn(_ name: String, _ text: String) throws { try write(dropIns + "/" + name, text) }

    func remove() {
        if let dir = opendir(dropIns) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                if name != "." && name != ".." { unlink(dropIns + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(dropIns)
        rmdir(stateDir)
        unlink(configPath)
        rmdir(root)
    }
}

private let ledYAML = """
name: led
address: "C0:FF:EE:00:00:03"
channels:
  - name: led
    characteristic: "ffe1"
    codec: hex
    writable: true

"""

private func json(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

@Suite struct DropInTests {
    @Test func bridgeKeysDefaultAndParse() throws {
        let defaults = try config("")
        #expect(defaults.stateDir == "/var/lib/gattbridge")
        #expect(defaults.bridgeAPI)
        let set = try config("state_dir: state\nbridge_api: false\n", file: "/etc/gattbridge/config.yaml")
        #expect(set.stateDir == "/etc/gattbridge/state")
        #expect(!set.bridgeAPI)
        #expect(issues("bridge_api: yes\n") == [
            "config.yaml:1:13: bridge_api in the top level must be true or false, got \"yes\" (YAML 1.2 reads this as a string)",
        ])
    }

    @Test func mainFileDevicesRememberTheirLine() throws {
        let parsed = try config(oneDevice)
        #expect(parsed.devices[0].source == DeviceSource(kind: .config, file: "config.yaml", line: 2))
    }

    @Test func sourceDoesNotMakeADeviceDifferent() throws {
        var moved = try config(oneDevice).devices[0]
        let original = moved
        moved.source = DeviceSource(kind: .config, file: "config.yaml", line: 40)
        #expect(moved == original)
    }

    @Test func jsonDeviceIsValidatedWithJSONPaths() throws {
        let device = try json(#"{"name":"x","address":"C0:FF:EE:00:00:07","channels":[{"name":"c","characteristic":"2a19","codec":"hexx"}]}"#)
        #expect(throws: ConfigErrors.self) { try ConfigLoader.validateDevice(json: device, file: "/s/x.yaml", existing: []) }
        do throws(ConfigErrors) {
            _ = try ConfigLoader.validateDevice(json: device, file: "/s/x.yaml", existing: [])
        } catch {
            #expect(error.issues.map(\.description) == [#"channels[0].codec: unknown codec "hexx" in channel "c" (did you mean "hex"?)"#])
        }
    }

    @Test func jsonDeviceMissingKeysAndWrongTypes() throws {
        let device = try json(#"{"name":"x","channels":[{"name":"c","characteristic":"2a19","codec":"hex","qos":"1","bogus":1}]}"#)
        do throws(ConfigErrors) {
            _ = try ConfigLoader.validateDevice(json: device, file: "/s/x.yaml", existing: [])
            Issue.record("accepted an invalid device")
        } catch {
            let lines = error.issues.map(\.description)
            #expect(lines.contains(#"device "x" is missing required key "address""#))
            #expect(lines.contains { $0.hasPrefix("channels[0].bogus: unknown key \"bogus\"") })
            #expect(lines.contains { $0.hasPrefix("channels[0].qos: qos in channel \"c\" must be an integer from 0 to 2") && $0.hasSuffix("(remove the quotes)") })
        }
    }

    @Test func jsonDeviceValidGetsAPISource() throws {
        let device = try json(#"{"name":"x","address":"c0:ff:ee:00:00:07","channels":[{"name":"c","characteristic":"2a19","codec":"uint8","interval":5,"mode":"read"}]}"#)
        let parsed = try ConfigLoader.validateDevice(json: device, file: "/s/x.yaml", existing: [])
        #expect(parsed.name == "x")
        #expect(parsed.address == BluetoothAddress("C0:FF:EE:00:00:07"))
        #expect(parsed.channels[0].interval == .seconds(5))
        #expect(parsed.source == DeviceSource(kind: .api, file: "/s/x.yaml", line: 0))
    }

    @Test func jsonDeviceClashingWithARunningOneIsRefused() throws {
        let existing = try config(oneDevice).devices
        let sameName = try json(#"{"name":"strap","address":"C0:FF:EE:00:00:07","channels":[{"name":"c","characteristic":"2a19","codec":"hex"}]}"#)
        let sameAddress = try json(#"{"name":"other","address":"C0:FF:EE:00:00:01","channels":[{"name":"c","characteristic":"2a19","codec":"hex"}]}"#)
        for device in [sameName, sameAddress] {
            do throws(ConfigErrors) {
                _ = try ConfigLoader.validateDevice(json: device, file: "/s/x.yaml", existing: existing)
                Issue.record("accepted a duplicate")
            } catch {
                #expect(error.issues.count == 1)
                #expect(error.issues[0].description.contains("already used by device \"strap\" at config.yaml:2")
                        || error.issues[0].description.contains("first used by device \"strap\" at config.yaml:2"))
            }
        }
    }

    @Test func dropInsAreLoadedAndBadOnesSkippedByName() throws {
        let fixture = try StateFixture(main: oneDevice + "\n")
        defer { fixture.remove() }
        try fixture.dropIn("led.yaml", ledYAML)
        try fixture.dropIn("broken.yaml", "name: broken\naddress: nope\nchannels: []\n")
        try fixture.dropIn("zz-dup.yaml", "name: led2\n" + ledYAML.split(separator: "\n", maxSplits: 1)[1])
        try fixture.dropIn("ignored.txt", "not a drop-in")
        let loaded = try ConfigLoader.loadWithDropIns(path: fixture.configPath)
        #expect(loaded.config.devices.map(\.name) == ["strap", "led"])
        #expect(loaded.config.devices[1].source == DeviceSource(kind: .api, file: fixture.dropIns + "/led.yaml", line: 1))
        let skipped = loaded.skipped.map(\.description)
        #expect(skipped.contains(fixture.dropIns + "/broken.yaml:2:10: address in device \"broken\" must be a Bluetooth address like \"AA:BB:CC:DD:EE:FF\", got \"nope\""))
        #expect(skipped.contains(fixture.dropIns + "/zz-dup.yaml:2:10: duplicate address C0:FF:EE:00:00:03 in device \"led2\"; already used by device \"led\" at \(fixture.dropIns)/led.yaml:2:10"))
    }

    @Test func savedDropInReadsBack() throws {
        let fixture = try StateFixture(main: "")
        defer { fixture.remove() }
        // U+2028 is a line break to libyaml even inside quotes: the saved text must escape it. (Control characters,
        // U+0085 among them, are refused in names; the delimiter below carries some.)
        let device = try json(#"{"name":"lamp \"1\"\u2028","address":"C0:FF:EE:00:00:05","channels":[{"name":"led","characteristic":"ffe1","codec":"hex","values":{"ON":"01","OFF":"00"},"writable":true,"interval":1.5},{"name":"serial","characteristic":"ffe2","codec":"text","delimiter":"\r\n"}]}"#)
        let path = DropInStore.path(for: "lamp \"1\"\u{2028}", stateDir: fixture.stateDir)
        #expect(path == fixture.dropIns + "/lamp__1__.yaml")
        try DropInStore.save(DropInStore.text(of: device), to: path)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(throws: DropInStore.Failure.self) { try DropInStore.save("{}", to: path) }
        let loaded = try ConfigLoader.loadWithDropIns(path: fixture.configPath)
        #expect(loaded.skipped == [])
        let expected = try ConfigLoader.validateDevice(json: device, file: path, existing: [])
        #expect(loaded.config.devices == [expected])
        try DropInStore.delete(path)
        #expect(try ConfigLoader.loadWithDropIns(path: fixture.configPath).config.devices.isEmpty)
    }
}
