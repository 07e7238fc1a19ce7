import Config
import MQTT
import Testing
@testable import BridgeCommands

/// Every check a command passes before it reaches its session, in the order a fleet needs: only the owner speaks
/// about a device's channels, but every bridge refuses an unknown device.
@Suite struct CommandTableTests {
    let table = CommandTable(
        config: CoreMachineTests.config([CoreMachineTests.device("lamp", 1, writable: true),
                                         CoreMachineTests.device("strap", 2),
                                         CoreMachineTests.device("stopped", 3)]),
        running: ["lamp", "strap"])

    func resolve(_ topic: String, _ payload: String = "01", retain: Bool = false,
                 owns: (String) -> Bool = { _ in true }) -> CommandTable.Resolution {
        table.resolve(MQTTMessage(topic: topic, string: payload, retain: retain), owns: owns)
    }

    func reason(_ resolution: CommandTable.Resolution) -> String? {
        if case .rejected(let reason, _) = resolution { reason } else { nil }
    }

    @Test func aValidSetGoesToItsDevice() {
        guard case .route(let device, let request) = resolve("gb/lamp/c/set") else {
            Issue.record("not routed")
            return
        }
        #expect(device == "lamp" && request.verb == .set && request.payload == Array("01".utf8))
        #expect(request.channel.name == "c" && request.topic == "gb/lamp/c/set")
    }

    @Test func whatIsNotACommandIsForTheFeatures() {
        guard case .notACommand = resolve("gb/bridge/request/devices") else { Issue.record("taken"); return }
        guard case .notACommand = resolve("gb/lamp/c") else { Issue.record("taken"); return }
    }

    @Test func refusals() {
        guard case .retained = resolve("gb/lamp/c/set", retain: true) else { Issue.record("retained ran"); return }
        #expect(reason(resolve("gb/nope/c/set")) == "unknown device nope")
        #expect(reason(resolve("gb/stopped/c/set")) == "unknown device stopped")   // no session: stopping or gone
        #expect(reason(resolve("gb/lamp/x/get")) == "unknown channel x on device lamp")
        #expect(reason(resolve("gb/strap/c/set")) == "channel strap/c is not writable")
        #expect(reason(resolve("gb/lamp/c/set", "")) == "empty payload for lamp/c; nothing written")
        let big = String(repeating: "0", count: CommandTable.maxCommandBytes + 1)
        #expect(reason(resolve("gb/lamp/c/set", big))?.hasPrefix("payload of 16385 bytes is over") == true)
        guard case .route = resolve("gb/strap/c/get", "") else { Issue.record("a get needs no payload"); return }
    }

    @Test func aDeviceAnotherBridgeOwnsIsLeftToIt() {
        let notOurs: (String) -> Bool = { $0 != "lamp" }
        guard case .notOwned = resolve("gb/lamp/x/set", owns: notOurs) else { Issue.record("spoke for it"); return }
        // An unknown device is refused by every bridge alike.
        #expect(reason(resolve("gb/nope/c/set", owns: notOurs)) == "unknown device nope")
    }
}
