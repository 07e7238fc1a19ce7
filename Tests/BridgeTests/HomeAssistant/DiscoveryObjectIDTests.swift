import Testing
@testable import BridgeHomeAssistant

@Suite struct DiscoveryObjectIDTests {
    @Test func safeLevelsStayAsTheyAre() {
        #expect(DiscoveryObjectID.make("heart_rate") == "heart_rate")
        #expect(DiscoveryObjectID.make("LED-1") == "LED-1")
    }

    @Test func unsafeLevelsAreReplacedAndDisambiguated() {
        let space = DiscoveryObjectID.make("heart rate")
        let dot = DiscoveryObjectID.make("heart.rate")
        #expect(space.hasPrefix("heart_rate_") && space.count == "heart_rate_".count + 8)
        #expect(dot.hasPrefix("heart_rate_"))
        #expect(space != dot)
        #expect(space != "heart_rate")
        #expect(DiscoveryObjectID.make("heart rate") == space)   // stable
        #expect(DiscoveryObjectID.isValid(Substring(space)))
        #expect(DiscoveryObjectID.isValid(Substring(DiscoveryObjectID.make("température"))))
        #expect(DiscoveryObjectID.isValid(Substring(DiscoveryObjectID.make(""))))
    }
}
