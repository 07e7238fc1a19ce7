import Testing
@testable import BridgeSession

/// A Connect or lookup never overtakes a Disconnect asked for before it (`CleanupOrder`).
@Suite struct CleanupOrderTests {
    @Test func workWaitsForTheCleanupsAskedBeforeItAndOnlyThose() {
        var order = CleanupOrder()
        #expect(order.after({}) != nil)                 // nothing to wait for
        let first = order.ask()
        #expect(order.after({}) == nil)                 // waits for the first
        let second = order.ask()
        #expect(order.after({}) == nil)                 // waits for both
        #expect(order.done(first).count == 1 && !order.allDone)
        #expect(order.done(second).count == 1 && order.allDone)
        #expect(order.done(second).isEmpty)
    }
}
