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

/// `KeyedGate` as `BlueZClient.serialized` uses it: a lane per device path, one numbered holder per operation.
/// (The connect slot's uses, lanes per adapter and holders that re-acquire, are in BridgeTests' ConnectGateTests.)
struct KeyedGateTests {
    @Test func waitersRunInArrivalOrderOneAtATime() async {
        let gate = KeyedGate<Int>()
        let recorder = Recorder()
        let key = "/org/bluez/hci0/dev_A"
        try? await gate.acquire(100, lane: key)   // the "running" operation holds the slot while the others line up

        var tasks: [Task<Void, Never>] = []
        for index in 0..<5 {
            tasks.append(Task {
                try? await gate.acquire(index, lane: key)
                await recorder.begin(key, "op\(index)")
                await Task.yield()
                await recorder.end(key)
                await gate.release(index)
            })
            // Enqueue strictly one after another so the expected order is well defined.
            await eventually("op\(index) to wait") { await gate.queue(lane: key).count == index + 1 }
        }
        #expect(await recorder.order.isEmpty)
        await gate.release(100)
        for task in tasks { await task.value }

        #expect(await recorder.order == ["op0", "op1", "op2", "op3", "op4"])
        #expect(await recorder.maxRunning[key] == 1)
        #expect(await !gate.isBusy(lane: key))
    }

    @Test func differentDevicesDoNotWaitForEachOther() async {
        let gate = KeyedGate<Int>()
        try? await gate.acquire(1, lane: "/dev_A")
        // A second device gets its slot at once although dev_A is held.
        try? await gate.acquire(2, lane: "/dev_B")
        #expect(await gate.isBusy(lane: "/dev_A"))
        #expect(await gate.isBusy(lane: "/dev_B"))
        await gate.release(2)
        await gate.release(1)
        #expect(await !gate.isBusy(lane: "/dev_A"))
        #expect(await !gate.isBusy(lane: "/dev_B"))
    }

    @Test func cancelledWaiterLeavesTheQueueAndTheNextGetsTheSlot() async throws {
        let gate = KeyedGate<Int>()
        let key = "/org/bluez/hci0/dev_C"
        try await gate.acquire(1, lane: key)
        let cancelled = Task { () -> Bool in
            do {
                try await gate.acquire(2, lane: key)
                return false
            } catch {
                return error is CancellationError
            }
        }
        await eventually("the first waiter to queue") { await gate.queue(lane: key).count == 1 }
        let next = Task { () -> Bool in (try? await gate.acquire(3, lane: key)) != nil }
        await eventually("the second waiter to queue") { await gate.queue(lane: key).count == 2 }

        cancelled.cancel()
        #expect(await cancelled.value, "a cancelled waiter stops waiting without the slot")
        await eventually("the cancelled waiter to leave") { await gate.queue(lane: key) == [3] }
        await gate.release(1)
        #expect(await next.value, "the slot goes to the waiter behind the cancelled one")
        #expect(await gate.holder(lane: key) == 3)
        await gate.release(3)
        #expect(await !gate.isBusy(lane: key), "the cancelled waiter never held the slot")
    }

    @Test func alreadyCancelledTaskDoesNotTakeAFreeSlot() async {
        let gate = KeyedGate<Int>()
        let task = Task { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                try await gate.acquire(1, lane: "/dev_D")
                return false
            } catch {
                return error is CancellationError
            }
        }
        #expect(await task.value)
        #expect(await !gate.isBusy(lane: "/dev_D"))
    }

    @Test func releaseOfAFreeKeyIsHarmless() async {
        let gate = KeyedGate<Int>()
        await gate.release(7)
        try? await gate.acquire(7, lane: "/dev_X")
        #expect(await gate.isBusy(lane: "/dev_X"))
        await gate.release(7)
        await gate.release(7)
        #expect(await !gate.isBusy(lane: "/dev_X"))
    }
}
