import Testing
@testable import MQTT

/// The I/O lock and the network-thread marker trap in debug builds when their rule is broken (checked in a child
/// process), and stay quiet when it is kept.
@Suite struct ConfinementTests {
    #if DEBUG
    @Test func libmosquittoCallWithoutTheIOLockTraps() async {
        await #expect(processExitsWith: .failure) {
            IOLock().assertHeld()
        }
    }

    @Test func networkThreadStateOffItsThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let owner = ThreadOwner()
            let thread = TestThread.detached { owner.claim() }
            thread.join()
            owner.assertOnOwner("network-thread state")
        }
    }

    @Test func ioLockIsNotRecursive() async {
        await #expect(processExitsWith: .failure) {
            let lock = IOLock()
            lock.withLock { lock.withLock {} }
        }
    }
    #endif

    @Test func rulesKeptDoNotTrap() {
        let lock = IOLock()
        lock.withLock { lock.assertHeld() }
        #expect(lock.withLockIfAvailable { lock.assertHeld(); return 1 } == 1)
        let owner = ThreadOwner()
        owner.claim()
        owner.assertOnOwner("state")
    }
}
