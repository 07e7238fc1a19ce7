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

    @Test func linkStateOffTheLinkThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let link = LinkCore(handle: try MosquittoHandle(configuration: MQTTConfiguration(clientID: "confined")),
                                ackLimit: .seconds(20))
            let thread = TestThread.detached { link.owner.claim() }
            thread.join()
            _ = link.turn.socketOpen
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

    @Test func linkStateOnTheLinkThreadDoesNotTrap() throws {
        let link = LinkCore(handle: try MosquittoHandle(configuration: MQTTConfiguration(clientID: "owned")),
                            ackLimit: .seconds(20))
        link.prepare(hosted: true, firstAttempt: 7)
        link.owner.claim()
        link.events.append(.refused(code: 5))
        link.events.append(.lost(.closedByClient))
        #expect(link.turn.hosted && link.turn.nextAttempt == 7)
        #expect(link.takeEvents() == [.refused(code: 5), .lost(.closedByClient)])
        #expect(link.takeEvents().isEmpty)
    }
}
