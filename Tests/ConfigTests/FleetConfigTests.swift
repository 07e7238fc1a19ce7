import Testing
@testable import Config

@Suite struct FleetConfigTests {
    @Test func withoutTheSectionTheBridgeIsAlone() throws {
        let parsed = try config("")
        #expect(parsed.fleet == nil)
        #expect(parsed.mqtt.bridgeID == nil)
    }

    @Test func anIdJoinsAFleetAndNamesTheWillsTopic() throws {
        let parsed = try config("bridge:\n  id: kitchen\n  handover_after: 4\n  unreachable_after: 5\nmqtt:\n  host: broker\n")
        #expect(parsed.fleet == FleetSettings(id: "kitchen", handoverAfter: .seconds(4), unreachableAfter: .seconds(5)))
        #expect(parsed.mqtt.bridgeID == "kitchen")
        #expect(parsed.mqtt.host == "broker")
    }

    @Test func anEmptySectionIsAFleetMemberNamedAfterTheHost() throws {
        let parsed = try config("bridge:\n")
        #expect(parsed.fleet?.id == FleetSettings.defaultID)
        #expect(parsed.fleet?.handoverAfter == .seconds(30))
        #expect(parsed.fleet?.unreachableAfter == .seconds(60))
        #expect(!FleetSettings.defaultID.isEmpty)
        #expect(sanitizeTopicLevel(FleetSettings.defaultID) == FleetSettings.defaultID)
    }

    @Test func badValuesNameTheirPlace() {
        #expect(issues("bridge:\n  id: \"a/b\"\n") == [
            "config.yaml:2:7: bridge.id \"a/b\" is not a valid topic level (no + # / $ or control characters)",
        ])
        #expect(issues("bridge:\n  id: request\n").first?.hasPrefix("config.yaml:2:7: bridge.id \"request\" is a level the bridge's own topics use") == true)
        let unknown = issues("bridge:\n  idd: x\n")
        #expect(unknown.count == 1 && unknown[0].hasPrefix("config.yaml:2:3: ") && unknown[0].contains("idd"), "\(unknown)")
        #expect(issues("bridge:\n  handover_after: -1\n").first?.hasPrefix("config.yaml:2:19: handover_after in bridge must be") == true)
        #expect(issues("bridge: 5\n").count == 1)
    }
}
