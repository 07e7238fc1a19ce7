import Codecs
import Testing
@testable import Config

@Suite struct AdapterConfigTests {
    @Test func defaultIsEveryAdapterWithFiveConnections() throws {
        let settings = try config(oneDevice).bluetooth
        #expect(settings.adapters == nil)
        #expect(settings.uses("hci7"))
        #expect(settings.maxConnections(of: "hci7") == 5)
        #expect(try config(oneDevice).devices[0].adapter == nil)
    }

    @Test func olderSingleAdapterIsAListOfOne() throws {
        let settings = try config("bluetooth:\n  adapter: hci1\n").bluetooth
        #expect(settings.adapters == [AdapterSetting(name: "hci1")])
        #expect(settings.uses("hci1") && !settings.uses("hci0"))
        #expect(settings.adapter == "hci1")
    }

    @Test func listMixesNamesAndMappings() throws {
        let settings = try config("bluetooth:\n  adapters: [hci0, {name: hci1, max_connections: 2}]\n").bluetooth
        #expect(settings.adapters == [AdapterSetting(name: "hci0"), AdapterSetting(name: "hci1", maxConnections: 2)])
        #expect(settings.maxConnections(of: "hci1") == 2)
        #expect(settings.maxConnections(of: "hci0") == 5)
    }

    @Test func errorsNameTheirPosition() {
        #expect(issues("bluetooth:\n  adapters: hci0\n") == [
            "config.yaml:2:13: adapters in bluetooth must be a list of adapter names (hci0) or {name, max_connections} mappings, got \"hci0\"",
        ])
        #expect(issues("bluetooth:\n  adapters: []\n") == [
            "config.yaml:2:13: adapters in bluetooth is empty; leave it out to use every adapter",
        ])
        #expect(issues("bluetooth:\n  adapters: [hci0, usb, hci0]\n") == [
            "config.yaml:2:20: adapters in bluetooth must be an adapter name like \"hci0\", got \"usb\"",
            "config.yaml:2:25: duplicate adapter hci0 in bluetooth.adapters (first at 2:14)",
        ])
        #expect(issues("bluetooth:\n  adapters:\n    - {name: hci1, max_connections: 0, extra: 1}\n") == [
            "config.yaml:3:37: max_connections in bluetooth.adapters[0] must be an integer from 1 to 64, got 0",
            "config.yaml:3:40: unknown key \"extra\" in bluetooth.adapters[0]",
        ])
        #expect(issues("bluetooth:\n  adapter: hci0\n  adapters: [hci1]\n") == [
            "config.yaml:3:13: bluetooth has both adapter (at 2:12) and adapters; use adapters",
        ])
    }

    @Test func deviceAdapterIsAnyOrAName() throws {
        let pinned = oneDevice + "\n    adapter: hci1\n"
        #expect(try config(pinned).devices[0].adapter == "hci1")
        #expect(try config(oneDevice + "\n    adapter: any\n").devices[0].adapter == nil)
        #expect(issues(oneDevice + "\n    adapter: usb0\n") == [
            "config.yaml:8:14: adapter in device \"strap\" must be \"any\" or an adapter name like \"hci0\", got \"usb0\"",
        ])
    }

    /// A device pinned to an adapter the bridge does not use would never connect: an error, in the main file and in
    /// a device added over the bridge API alike.
    @Test func aPinnedAdapterMustBeListed() throws {
        let listed = "bluetooth:\n  adapters: [hci0, hci1]\n"
        #expect(try config(listed + oneDevice + "\n    adapter: hci1\n").devices[0].adapter == "hci1")
        #expect(issues(listed + oneDevice + "\n    adapter: hci3\n") == [
            "config.yaml:10:14: adapter hci3 of device \"strap\" is not in bluetooth.adapters (hci0, hci1); add it there or use any",
        ])
        let json = try JSONValue.parse(#"{"name":"lamp","address":"C0:FF:EE:00:00:09","adapter":"hci2","channels":[{"name":"c","characteristic":"2a19","codec":"uint8"}]}"#)
        #expect(throws: ConfigErrors.self) {
            try ConfigLoader.validateDevice(json: json, file: "lamp.yaml", existing: [],
                                            adapters: [AdapterSetting(name: "hci0")])
        }
        #expect(try ConfigLoader.validateDevice(json: json, file: "lamp.yaml", existing: []).adapter == "hci2")
    }

    @Test func aDeviceMovedToAnotherAdapterHasChanged() throws {
        let a = try config(oneDevice).devices[0]
        var b = a
        b.adapter = "hci1"
        #expect(a != b)
    }
}
