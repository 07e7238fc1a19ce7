import Testing
@testable import BlueZ

/// Records what ran, in order, and the highest number of operations overlapping per key.
private actor Recorder {
    var order: [String] = []
    var running: [String: Int] = [:]
    var maxRunning: [String: Int] = [:]

    func begin(_ key: String, _ name: String) {
        order.append(name)
        running[key, default: 0] += 1
        maxRunning[key] = max(maxRunning[key] ?? 0, running[key]!)
    }

    func end(_ key: String) {
        running[key, default: 0] -= 1
    }
}

/// Waits for a condition on an actor without sleeping, failing after a deadline.
/// The deadline only bounds a failure: suites run in parallel on two cores, and a spinning `Task.yield()` loop would
/// itself hold one of the pool's two threads, so it sleeps a millisecond between checks.
private func eventually(_ what: String, within seconds: Int = 30, _ condition: () async -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if await condition() { return }
        try? await Task.sleep(for: .milliseconds(1))
    }
    Issue.record("timed out waiting for \(what)")
}

struct DeviceOperationQueueTests {
    @Test func waitersRunInArrivalOrderOneAtATime() async {
        let queue = DeviceOperationQueue()
        let recorder = Recorder()
        let key = "/org/bluez/hci0/dev_A"
        try? await queue.acquire(key)   // the "running" operation holds the slot while the others line up

        var tasks: [Task<Void, Never>] = []
        for index in 0..<5 {
            tasks.append(Task {
                try? await queue.acquire(key)
                await recorder.begin(key, "op\(index)")
                await Task.yield()
                await recorder.end(key)
                await queue.release(key)
            })
            // Enqueue strictly one after another so the expected order is well defined.
            await eventually("op\(index) to wait") { await queue.waiting(key) == index + 1 }
        }
        #expect(await recorder.order.isEmpty)
        await queue.release(key)
        for task in tasks { await task.value }

        #expect(await recorder.order == ["op0", "op1", "op2", "op3", "op4"])
        #expect(await recorder.maxRunning[key] == 1)
        #expect(await !queue.isBusy(key))
    }

    @Test func differentDevicesDoNotWaitForEachOther() async {
        let queue = DeviceOperationQueue()
        try? await queue.acquire("/dev_A")
        // A second device gets its slot at once although dev_A is held.
        try? await queue.acquire("/dev_B")
        #expect(await queue.isBusy("/dev_A"))
        #expect(await queue.isBusy("/dev_B"))
        await queue.release("/dev_B")
        await queue.release("/dev_A")
        #expect(await !queue.isBusy("/dev_A"))
        #expect(await !queue.isBusy("/dev_B"))
    }

    @Test func cancelledWaiterLeavesTheQueueAndTheNextGetsTheSlot() async throws {
        let queue = DeviceOperationQueue()
        let key = "/org/bluez/hci0/dev_C"
        try await queue.acquire(key)
        let cancelled = Task { () -> BlueZError? in
            do throws(BlueZError) {
                try await queue.acquire(key)
                return nil
            } catch {
                return error
            }
        }
        await eventually("the first waiter to queue") { await queue.waiting(key) == 1 }
        let next = Task { () -> Bool in
            do throws(BlueZError) {
                try await queue.acquire(key)
                return true
            } catch {
                return false
            }
        }
        await eventually("the second waiter to queue") { await queue.waiting(key) == 2 }

        cancelled.cancel()
        #expect(await cancelled.value == .cancelled, "a cancelled waiter stops waiting without the slot")
        #expect(await queue.waiting(key) == 1)
        await queue.release(key)
        #expect(await next.value, "the slot goes to the waiter behind the cancelled one")
        #expect(await queue.isBusy(key))
        await queue.release(key)
        #expect(await !queue.isBusy(key), "the cancelled waiter never held the slot")
    }

    @Test func alreadyCancelledTaskDoesNotTakeAFreeSlot() async {
        let queue = DeviceOperationQueue()
        let task = Task { () -> BlueZError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(BlueZError) {
                try await queue.acquire("/dev_D")
                return nil
            } catch {
                return error
            }
        }
        #expect(await task.value == .cancelled)
        #expect(await !queue.isBusy("/dev_D"))
    }

    @Test func releaseOfAFreeKeyIsHarmless() async {
        let queue = DeviceOperationQueue()
        await queue.release("/dev_X")
        try? await queue.acquire("/dev_X")
        #expect(await queue.isBusy("/dev_X"))
        await queue.release("/dev_X")
        #expect(await !queue.isBusy("/dev_X"))
    }
}
