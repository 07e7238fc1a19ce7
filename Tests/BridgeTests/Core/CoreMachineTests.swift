import Bluetooth
import Codecs
import Config
import MQTT
import Testing
@testable import BridgeCoreLayer
@testable import BridgeFeatureHost

/// The core's decisions without the bench: config changes in every order, the reload diff, the bridge API's changes
/// and the fleet's holds.
@Suite struct CoreMachineTests {
    static func device(_ name: String, _ n: Int, api: Bool = false, codec: CodecKind = .hex,
                       writable: Bool = false) -> DeviceConfig {
        var channel = ChannelConfig(name: "c", characteristic: BluetoothUUID("2a19")!, codec: try! Codec(codec))
        channel.writable = writable
        channel.retain = true
        return DeviceConfig(name: name, address: BluetoothAddress("C0:FF:EE:00:00:0\(n)")!, channels: [channel],
                            source: DeviceSource(kind: api ? .api : .config, file: api ? "/s/\(name).yaml" : "/c.yaml",
                                                 line: api ? 0 : n))
    }

    static func config(_ devices: [DeviceConfig], base: String = "gb") -> BridgeConfig {
        var config = BridgeConfig(devices: devices)
        config.mqtt.baseTopic = base
        return config
    }

    static func names(_ config: BridgeConfig) -> [String] { config.devices.map(\.name).sorted() }

    // MARK: - Reload diff

    @Test func aReloadStopsOnlyWhatChangedOrWent() {
        let a = Self.device("a", 1), b = Self.device("b", 2), c = Self.device("c", 3)
        var moved = a
        moved.source.line = 40          // an entry that only moved in the file has not changed
        var b2 = b
        b2.channels[0].retain = false
        let diff = ConfigDiff(old: Self.config([a, b, c]), new: Self.config([moved, b2, Self.device("d", 4)]))
        #expect(diff.leaving.map(\.name) == ["b", "c"])
        #expect(diff.starting.map(\.name) == ["b", "d"])
        #expect(!diff.baseChanged && !diff.bridgeStateMoved && !diff.bluetoothChanged && !diff.fleetChanged)
    }

    @Test func aNewBaseTopicRestartsEveryDevice() {
        let a = Self.device("a", 1), b = Self.device("b", 2)
        let diff = ConfigDiff(old: Self.config([a, b]), new: Self.config([a, b], base: "other"))
        #expect(diff.leaving.map(\.name) == ["a", "b"] && diff.starting.map(\.name) == ["a", "b"])
        #expect(diff.baseChanged && diff.bridgeStateMoved)
    }

    @Test func aReloadWithNothingToStopIsInstalledAtOnce() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        #expect(machine.handle(.began(adapters: [], sighted: [], bluezAvailable: true)).started == ["a"])
        let new = Self.config([Self.device("a", 1), Self.device("b", 2)])
        let actions = machine.handle(.requested(1, .reload(new, basedOn: 0, mqttReplaced: false)))
        guard case .install(_, let installed, let diff, _, _)? = actions.first,
              case .finished(1, .success(nil))? = actions.last else {
            Issue.record("unexpected \(actions)")
            return
        }
        #expect(installed == new && diff.starting.map(\.name) == ["b"])
        #expect(actions.started == ["b"] && machine.running == ["a", "b"])
        #expect(machine.config == new && machine.generation == 1 && !machine.isApplying)
    }

    @Test func aReloadInstallsOnlyOnceItsSessionsHaveStopped() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1), Self.device("b", 2)]))
        _ = machine.handle(.began(adapters: [], sighted: [], bluezAvailable: true))
        let new = Self.config([Self.device("a", 1)])
        let actions = machine.handle(.requested(7, .reload(new, basedOn: 0, mqttReplaced: false)))
        guard actions.count == 1, case .stop(7, let leaving) = actions[0] else {
            Issue.record("unexpected \(actions)")
            return
        }
        #expect(leaving.map(\.name) == ["b"])
        #expect(machine.isApplying && Self.names(machine.config) == ["a", "b"])
        #expect(machine.handle(.stopped(6)).isEmpty)            // not this change's
        let done = machine.handle(.stopped(7))
        guard case .install? = done.first, case .finished(7, .success(nil))? = done.last else {
            Issue.record("unexpected \(done)")
            return
        }
        #expect(machine.config == new && !machine.isApplying && done.started.isEmpty && machine.running == ["a"])
    }

    // MARK: - Bridge API changes

    @Test func apiChangesAreCheckedAgainstTheRunningConfig() {
        var machine = CoreMachine(config: Self.config([Self.device("file", 1), Self.device("api", 2, api: true)]))
        func answer(_ change: DeviceChange, _ id: UInt64) -> Result<DeviceConfig?, DeviceChangeError>? {
            var actions = machine.handle(.requested(id, .device(change)))
            if case .stop(let stopping, _)? = actions.first { actions = machine.handle(.stopped(stopping)) }
            for case .finished(id, let result) in actions { return result }
            return nil
        }
        #expect(answer(.add(Self.device("file", 3, api: true)), 1) == .failure(.nameTaken("file")))
        #expect(answer(.add(Self.device("x", 1, api: true)), 2)
                == .failure(.addressTaken("C0:FF:EE:00:00:01", device: "file")))
        #expect(answer(.remove(name: "nope"), 3) == .failure(.unknownDevice("nope")))
        #expect(answer(.remove(name: "file"), 4) == .failure(.fromConfigFile("file", file: "/c.yaml", line: 1)))
        #expect(machine.generation == 0)        // refusals change nothing
        #expect(answer(.add(Self.device("new", 3, api: true)), 5) == .success(Self.device("new", 3, api: true)))
        // Added again, identical (a reload that read its drop-in got there first): done, no change.
        #expect(answer(.add(Self.device("new", 3, api: true)), 6) == .success(Self.device("new", 3, api: true)))
        #expect(machine.generation == 1)
        #expect(answer(.remove(name: "api"), 7) == .success(Self.device("api", 2, api: true)))
        #expect(Self.names(machine.config) == ["file", "new"] && machine.generation == 2)
    }

    @Test func aChangeArrivingWhileAnotherStopsSessionsWaitsForIt() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1), Self.device("b", 2)]))
        let reload = Self.config([Self.device("a", 1)])
        _ = machine.handle(.requested(1, .reload(reload, basedOn: 0, mqttReplaced: false)))
        // Computed only once the reload is in: from its config, not the one it replaces.
        #expect(machine.handle(.requested(2, .device(.add(Self.device("x", 5, api: true))))).isEmpty)
        #expect(machine.queue.count == 1)
        let actions = machine.handle(.stopped(1))
        let finished = actions.compactMap { action -> UInt64? in
            if case .finished(let id, _) = action { id } else { nil }
        }
        #expect(finished == [1, 2])
        #expect(Self.names(machine.config) == ["a", "x"] && machine.generation == 2)
    }

    // MARK: - A reload and an API change, in every order

    enum Order: CaseIterable {
        case reloadFirst, apiFirst, reloadDuringAPI, apiDuringReload
    }

    /// Drives the two changes in `order` (answering every stop at once unless the other change must arrive while
    /// it is pending) and returns the final config.
    static func run(_ order: Order, initial: BridgeConfig, reload: BridgeConfig, readAfterAPI: Bool,
                    api: DeviceChange) -> BridgeConfig {
        var machine = CoreMachine(config: initial)
        var pending: [UInt64] = []
        func feed(_ input: CoreMachine.Input, settle: Bool = true) {
            var queue = [input]
            while !queue.isEmpty {
                for case .stop(let id, _) in machine.handle(queue.removeFirst()) {
                    if settle { queue.append(.stopped(id)) } else { pending.append(id) }
                }
            }
        }
        let change = ConfigChange.device(api)
        switch order {
        case .reloadFirst:
            feed(.requested(1, .reload(reload, basedOn: 0, mqttReplaced: false)))
            feed(.requested(2, change))
        case .apiFirst:
            feed(.requested(1, change))
            feed(.requested(2, .reload(reload, basedOn: readAfterAPI ? machine.generation : 0, mqttReplaced: false)))
        case .reloadDuringAPI:
            feed(.requested(1, change), settle: false)
            feed(.requested(2, .reload(reload, basedOn: 0, mqttReplaced: false)), settle: false)
        case .apiDuringReload:
            feed(.requested(1, .reload(reload, basedOn: 0, mqttReplaced: false)), settle: false)
            feed(.requested(2, change), settle: false)
        }
        while !pending.isEmpty { feed(.stopped(pending.removeFirst()), settle: false) }
        #expect(!machine.isApplying && machine.queue.isEmpty)
        return machine.config
    }

    @Test(arguments: Order.allCases, [false, true])
    func aReloadAndAnAddGiveOneConfigInAnyOrder(_ order: Order, readAfterAPI: Bool) {
        // The reload changes device a (its session stops) and drops b; the API adds x. A reload read after the
        // drop-in was saved has x already.
        let a = Self.device("a", 1), b = Self.device("b", 2), x = Self.device("x", 5, api: true)
        var a2 = a
        a2.channels[0].retain = false
        let reload = Self.config(readAfterAPI && order == .apiFirst ? [a2, x] : [a2])
        let final = Self.run(order, initial: Self.config([a, b]), reload: reload, readAfterAPI: readAfterAPI,
                             api: .add(x))
        #expect(final.devices == [a2, x], "\(order)")
    }

    @Test(arguments: Order.allCases, [false, true])
    func aReloadAndARemoveGiveOneConfigInAnyOrder(_ order: Order, readAfterAPI: Bool) {
        // The drop-in of y is deleted before the change is asked for; a reload read after that lacks y.
        let a = Self.device("a", 1), y = Self.device("y", 2, api: true)
        var a2 = a
        a2.channels[0].retain = false
        let reload = Self.config(readAfterAPI && order == .apiFirst ? [a2] : [a2, y])
        let final = Self.run(order, initial: Self.config([a, y]), reload: reload, readAfterAPI: readAfterAPI,
                             api: .remove(name: "y"))
        #expect(final.devices == [a2], "\(order)")
    }

    @Test func aReloadKeepsWhatItsFilesSayOverAnOlderAPIChange() {
        // x was added, and the reload read after that no longer has it (its drop-in was deleted by hand): the files
        // decide, nothing is replayed.
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        _ = machine.handle(.requested(1, .device(.add(Self.device("x", 5, api: true)))))
        _ = machine.handle(.requested(2, .reload(Self.config([Self.device("a", 1)]), basedOn: 1, mqttReplaced: false)))
        _ = machine.handle(.stopped(2))
        #expect(Self.names(machine.config) == ["a"])
    }

    // MARK: - Holds

    static func command(_ n: Int) -> MQTTMessage {
        MQTTMessage(topic: "gb/a/c/set", string: "0\(n)")
    }

    @Test func aHeldDevicesCommandsRunInOrderWhenTheHoldEnds() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        #expect(machine.handle(.hold(device: "a", held: true, known: true))
                == [.holdValues(device: "a"), .announceHeld(device: "a", true)])
        #expect(machine.handle(.hold(device: "a", held: true, known: true)).isEmpty)
        for n in 1...3 { #expect(machine.holdCommand(Self.command(n), device: "a") == (true, true)) }
        #expect(machine.holdCommand(Self.command(9), device: "b") == (false, true))     // not held
        #expect(machine.handle(.hold(device: "a", held: false, known: true)) == [
            .releaseValues(device: "a", deliver: true), .announceHeld(device: "a", false),
            .replay([Self.command(1), Self.command(2), Self.command(3)]),
        ])
        #expect(machine.holdCommand(Self.command(4), device: "a") == (false, true))
    }

    @Test func aHoldEndedByLosingTheDeviceDropsItsCommandsAndValues() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        _ = machine.handle(.hold(device: "a", held: true, known: true))
        _ = machine.holdCommand(Self.command(1), device: "a")
        #expect(machine.handle(.ownership(device: "a", owned: false, running: true)) == [.releaseValues(device: "a", deliver: false)])
        #expect(machine.fleet.holding.isEmpty)
        #expect(machine.handle(.hold(device: "a", held: false, known: true)).isEmpty)   // silent: nothing replayed
    }

    @Test func holdsAreBoundedAndOnlyForRunningDevices() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        #expect(machine.handle(.hold(device: "gone", held: true, known: false)).isEmpty)
        _ = machine.handle(.hold(device: "a", held: true, known: true))
        for n in 0..<CoreMachine.maxHeldCommands { #expect(machine.holdCommand(Self.command(n), device: "a").accepted) }
        #expect(machine.holdCommand(Self.command(0), device: "a") == (true, false))
    }

    @Test func aDeviceThatLeavesTakesItsHoldAlong() {
        var machine = CoreMachine(config: Self.config([Self.device("a", 1)]))
        _ = machine.handle(.hold(device: "a", held: true, known: true))
        _ = machine.holdCommand(Self.command(1), device: "a")
        _ = machine.handle(.requested(1, .reload(Self.config([]), basedOn: 0, mqttReplaced: false)))
        _ = machine.handle(.stopped(1))
        #expect(machine.fleet.holding.isEmpty)
        #expect(machine.holdCommand(Self.command(2), device: "a") == (false, true))
    }
}

extension [CoreMachine.Action] {
    /// The devices whose sessions these actions start, in order.
    var started: [String] {
        compactMap { action in
            guard case .start(let device, _, _, _) = action else { return nil }
            return device.name
        }
    }

    /// Without what placing the devices says (adapters, rooms, discovery, logs): the fleet's and the config's decisions.
    var decisions: [CoreMachine.Action] {
        filter { action in
            switch action {
            case .adapters, .room, .discovery, .sessionAdapter, .log: false
            default: true
            }
        }
    }
}
