import Testing
@testable import DBus

/// Loop-only state traps in debug builds when touched from another thread (the check runs in a child process).
@Suite struct LoopConfinementTests {
    #if DEBUG
    @Test func loopOnlyStateTrapsOffTheLoopThread() async {
        await #expect(processExitsWith: .failure) {
            let core = ConnectionCore(loop: EventLoop())
            _ = core.taps.count
        }
    }
    #endif

    @Test func loopOnlyStateIsFineOnTheLoopThread() async {
        let loop = EventLoop()
        let core = ConnectionCore(loop: loop)
        #expect(await loop.run { core.taps.count + core.handlers.count } == 0)
    }
}
