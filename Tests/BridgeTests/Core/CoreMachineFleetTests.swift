import Config
import MQTT
import Testing
@testable import BridgeCoreLayer

/// The fleet's half of the machine (docs/fleet.md): one view of ownership and holds, each change announced once.
@Suite struct CoreMachineFleetTests {
    static func fleetConfig(_ devices: [DeviceConfig]) -> BridgeConfig {
        var config = CoreMachineTests.config(devices)
        config.fleet = FleetSettings(id: "one")
        return config
    }

    @Test func aLoneBridgeOwnsEveryDeviceAndAFleetMemberOnlyWhatItTook() {
        #expect(CoreMachine(config: CoreMachineTests.config([CoreMachineTests.device("a", 1)])).fleet.owns("a"))
        var machine = CoreMachine(config: Self.fleetConfig([CoreMachineTests.device("a", 1)]))
        #expect(!machine.fleet.owns("a"))
        #expect(machine.handle(.ownership(device: "a", owned: true, running: true)).decisions
                == [.releaseValues(device: "a", deliver: true), .ownershipChanged(device: "a", owned: true)])
        #expect(machine.fleet.owns("a"))
        // Told again: nothing changed, nothing said.
        #expect(machine.handle(.ownership(device: "a", owned: true, running: true))
                == [.releaseValues(device: "a", deliver: true)])
    }

    @Test func ownershipDecidedBeforeTheSessionIsSaidWhenItStartsOnce() {
        var machine = CoreMachine(config: Self.fleetConfig([CoreMachineTests.device("a", 1)]))
        #expect(machine.handle(.ownership(device: "a", owned: true, running: false))
                == [.releaseValues(device: "a", deliver: true)])
        #expect(machine.handle(.sessionStarted(device: "a")) == [.announceOwnership(device: "a")])
        #expect(machine.handle(.sessionStarted(device: "a")).isEmpty)
    }

    @Test func aPassiveDevicesOwnershipIsSaidAtOnce() {
        var passive = CoreMachineTests.device("p", 2)
        passive.channels = []
        passive.advert = .format(.bthome)
        var machine = CoreMachine(config: Self.fleetConfig([passive]))
        #expect(machine.handle(.ownership(device: "p", owned: true, running: false)).last
                == .announceOwnership(device: "p"))
    }

    @Test func joiningAFleetGivesEveryDeviceUpAndTheInstallSaysWhatWasOwnedBefore() {
        var machine = CoreMachine(config: CoreMachineTests.config([CoreMachineTests.device("a", 1)]))
        let actions = machine.handle(.requested(1, .reload(Self.fleetConfig([CoreMachineTests.device("a", 1)]),
                                                            basedOn: 0, mqttReplaced: false)))
        guard case .install(_, _, _, _, let before)? = actions.first else {
            Issue.record("unexpected \(actions)")
            return
        }
        #expect(!before.isFleet && before.owns("a"))
        #expect(machine.fleet.isFleet && !machine.fleet.owns("a"))
    }
}
