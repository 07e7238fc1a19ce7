import Adverts
import Bluetooth
import Config
import Testing
@testable import BridgeCoreLayer
@testable import BridgeFeatureHost

/// Auto devices (docs/adverts.md): heard, never saved, kept across reloads while the `adverts:` section allows them,
/// adopted by a saved device of their address.
@Suite struct CoreMachineAdvertTests {
    static let address = BluetoothAddress("A4:C1:38:1A:2B:3C")!

    static func auto(_ n: Int = 0, format: AdvertFormat = .bthome) -> DeviceConfig {
        let address = n == 0 ? Self.address : BluetoothAddress("A4:C1:38:00:00:0\(n)")!
        return DeviceConfig(name: "\(format.rawValue)-\(address.withoutColons.lowercased())", address: address,
                            channels: [], source: DeviceSource(kind: .advert, file: "", line: 0),
                            advert: .format(format))
    }

    static func config(_ devices: [DeviceConfig], auto: [AdvertFormat] = [.bthome], limit: Int = 100) -> BridgeConfig {
        var config = CoreMachineTests.config(devices)
        config.adverts = AdvertSettings(enabled: true, auto: auto, autoLimit: limit)
        return config
    }

    static func apply(_ machine: inout CoreMachine, _ change: ConfigChange, id: UInt64 = 1)
        -> Result<DeviceConfig?, DeviceChangeError>? {
        var actions = machine.handle(.requested(id, change))
        if case .stop(let stopping, _)? = actions.first { actions = machine.handle(.stopped(stopping)) }
        for case .finished(id, let result) in actions { return result }
        return nil
    }

    @Test func anAutoDeviceIsAddedOnceAndNeverTwice() throws {
        var machine = CoreMachine(config: Self.config([CoreMachineTests.device("a", 1)]))
        #expect(try Self.apply(&machine, .device(.add(Self.auto())))?.get()?.name == "bthome-a4c1381a2b3c")
        #expect(CoreMachineTests.names(machine.config) == ["a", "bthome-a4c1381a2b3c"])
        #expect(try Self.apply(&machine, .device(.add(Self.auto())), id: 2)?.get()?.name == "bthome-a4c1381a2b3c")
        #expect(machine.config.devices.count == 2)
    }

    @Test func aSavedDeviceOfItsAddressAdoptsIt() throws {
        var machine = CoreMachine(config: Self.config([]))
        _ = Self.apply(&machine, .device(.add(Self.auto())))
        var adopted = DeviceConfig(name: "porch", address: Self.address, channels: [],
                                   source: DeviceSource(kind: .api, file: "/s/porch.yaml", line: 0), advert: .format(.bthome))
        adopted.bindkey = Bindkey(hex: String(repeating: "ab", count: 16))
        #expect(try Self.apply(&machine, .device(.add(adopted)), id: 2)?.get() == adopted)
        #expect(CoreMachineTests.names(machine.config) == ["porch"])
        #expect(machine.config.devices[0].source.kind == .api)
    }

    /// Refused before issue 40: a radio that took every slot kept them for good.
    @Test func anAutoDeviceCanBeRemoved() throws {
        var machine = CoreMachine(config: Self.config([]))
        _ = Self.apply(&machine, .device(.add(Self.auto())))
        let result = Self.apply(&machine, .device(.remove(name: "bthome-a4c1381a2b3c")), id: 2)
        #expect(try result?.get()?.name == "bthome-a4c1381a2b3c")
        #expect(machine.config.devices.isEmpty)
    }

    @Test func aReloadKeepsAutoDevicesTheNewSectionAllows() {
        var machine = CoreMachine(config: Self.config([]))
        _ = Self.apply(&machine, .device(.add(Self.auto(1))))
        _ = Self.apply(&machine, .device(.add(Self.auto(2, format: .govee))), id: 2)
        // Files read after both: they hold neither, and the reload keeps the bthome one only.
        let loaded = Self.config([CoreMachineTests.device("a", 1)])
        _ = Self.apply(&machine, .reload(loaded, basedOn: machine.generation, mqttReplaced: false), id: 3)
        #expect(CoreMachineTests.names(machine.config) == ["a", "bthome-a4c138000001"])
    }

    @Test func aReloadDropsAutoDevicesWhenAdvertsAreOffOrTheFilesSaveThem() {
        var machine = CoreMachine(config: Self.config([]))
        _ = Self.apply(&machine, .device(.add(Self.auto(1))))
        _ = Self.apply(&machine, .device(.add(Self.auto(2))), id: 2)
        var saved = CoreMachineTests.device("kitchen", 1)
        saved.address = Self.auto(1).address
        let loaded = Self.config([saved], limit: 100)
        _ = Self.apply(&machine, .reload(loaded, basedOn: machine.generation, mqttReplaced: false), id: 3)
        #expect(CoreMachineTests.names(machine.config) == ["bthome-a4c138000002", "kitchen"])
        var off = loaded
        off.adverts.enabled = false
        _ = Self.apply(&machine, .reload(off, basedOn: machine.generation, mqttReplaced: false), id: 4)
        #expect(CoreMachineTests.names(machine.config) == ["kitchen"])
    }

    @Test func aReloadKeepsNoMoreAutoDevicesThanTheNewLimit() {
        var machine = CoreMachine(config: Self.config([]))
        for n in 1...3 { _ = Self.apply(&machine, .device(.add(Self.auto(n))), id: UInt64(n)) }
        _ = Self.apply(&machine, .reload(Self.config([], limit: 2), basedOn: machine.generation, mqttReplaced: false),
                       id: 9)
        #expect(machine.config.devices.count == 2)
    }
}
