import Testing
@testable import BridgeSession

/// Polls `condition` until it holds or `timeout` passes; waiting on state, not on time.
func eventually(_ timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return await condition()
}

/// Records the order in which tasks got the slot.
actor Recorder {
    private(set) var entries: [String] = []
    func add(_ entry: String) { entries.append(entry) }
}

@Suite struct ConnectGateTests {
    /// Starts a task that acquires `key` and records the grant; returns once the request is queued.
    func queueAcquire(_ gate: ConnectGate<String>, _ key: String, _ recorder: Recorder) async -> Task<Void, any Error> {
        let task = Task {
            try await gate.acquire(key)
            await recorder.add(key)
        }
        #expect(await eventually {
            let (queue, holder) = (await gate.queue, await gate.holder)
            return queue.contains(key) || holder == key
        })
        return task
    }

    @Test func freeGateGrantsAtOnceAndReleaseIsIdempotent() async throws {
        let gate = ConnectGate<String>()
        try await gate.acquire("a")
        #expect(await gate.holder == "a")
        try await gate.acquire("a")              // re-acquiring the held slot returns at once
        await gate.release("a")
        await gate.release("a")
        #expect(await gate.holder == nil)
        try await gate.acquire("b")
        #expect(await gate.holder == "b")
    }

    @Test func waitersAreServedInArrivalOrder() async throws {
        let gate = ConnectGate<String>()
        let recorder = Recorder()
        try await gate.acquire("first")
        var tasks: [Task<Void, any Error>] = []
        for key in ["b", "c", "d"] { tasks.append(await queueAcquire(gate, key, recorder)) }
        #expect(await gate.queue == ["b", "c", "d"])

        for (holder, next) in [("first", "b"), ("b", "c"), ("c", "d")] {
            await gate.release(holder)
            #expect(await eventually { await recorder.entries.last == next })
            #expect(await gate.holder == next)
        }
        for task in tasks { try await task.value }
        #expect(await recorder.entries == ["b", "c", "d"])
    }

    @Test func cancelledWaiterLeavesTheQueue() async throws {
        let gate = ConnectGate<String>()
        let recorder = Recorder()
        try await gate.acquire("holder")
        let b = await queueAcquire(gate, "b", recorder)
        let c = await queueAcquire(gate, "c", recorder)
        b.cancel()
        await #expect(throws: CancellationError.self) { try await b.value }
        #expect(await gate.queue == ["c"])
        await gate.release("holder")
        try await c.value
        #expect(await recorder.entries == ["c"])
        #expect(await gate.holder == "c")
    }

    @Test func releaseWithdrawsAPendingRequest() async throws {
        let gate = ConnectGate<String>()
        let recorder = Recorder()
        try await gate.acquire("holder")
        let b = await queueAcquire(gate, "b", recorder)
        await gate.release("b")
        await #expect(throws: CancellationError.self) { try await b.value }
        #expect(await gate.queue.isEmpty)
        #expect(await gate.holder == "holder")
    }

    @Test func grantRacingWithCancellationIsHandedOn() async throws {
        let gate = ConnectGate<String>()
        let recorder = Recorder()
        for round in 0..<50 {
            let holder = "holder\(round)", b = "b\(round)", c = "c\(round)"
            try await gate.acquire(holder)
            let tb = await queueAcquire(gate, b, recorder)
            let tc = await queueAcquire(gate, c, recorder)
            // Cancel b and free the slot at the same moment: whether b is withdrawn or granted first, it must end
            // cancelled and the slot must reach c.
            tb.cancel()
            await gate.release(holder)
            await #expect(throws: CancellationError.self) { try await tb.value }
            try await tc.value
            #expect(await gate.holder == c)
            await gate.release(c)
        }
        #expect(await gate.holder == nil)
        #expect(await gate.queue.isEmpty)
    }

    @Test func alreadyCancelledTaskDoesNotTakeTheSlot() async {
        let gate = ConnectGate<String>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await gate.acquire("a")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await gate.holder == nil)
    }

    /// A device that never answers holds the slot only until its attempt times out; the others then go in order.
    @Test func silentDeviceDoesNotBlockOthers() async throws {
        let gate = ConnectGate<String>()
        let recorder = Recorder()
        let silent = Task {
            try await gate.withSlot("silent") {
                await recorder.add("silent")
                // A Connect that never answers, bounded by its connect timeout as the orchestrator does.
                try await withTimeout(.milliseconds(50)) { try await Task.sleep(for: .seconds(3600)) }
            }
        }
        #expect(await eventually { await gate.holder == "silent" })
        var others: [Task<Void, any Error>] = []
        for key in ["x", "y"] {
            others.append(Task { try await gate.withSlot(key) { await recorder.add(key) } })
            #expect(await eventually {
                let (queue, entries) = (await gate.queue, await recorder.entries)
                return queue.contains(key) || entries.contains(key)
            })
        }
        await #expect(throws: TimedOut.self) { try await silent.value }
        for task in others { try await task.value }
        #expect(await recorder.entries == ["silent", "x", "y"])
        #expect(await gate.holder == nil)
    }
}

struct TimedOut: Error {}

/// Runs `body`, throwing `TimedOut` (and cancelling it) if it takes longer than `limit`.
func withTimeout(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask { try await body(); return true }
        group.addTask { try await Task.sleep(for: limit); return false }
        let finished = try await group.next() ?? false
        group.cancelAll()
        if !finished { throw TimedOut() }
    }
}

@Suite struct ConnectGateLaneTests {
    @Test func lanesAreIndependentAndReleaseFindsTheLane() async throws {
        let gate = ConnectGate<String>()
        try await gate.acquire("a", lane: "/org/bluez/hci0")
        try await gate.acquire("b", lane: "/org/bluez/hci1")      // another adapter: granted at once
        #expect(await gate.holder(lane: "/org/bluez/hci0") == "a")
        #expect(await gate.holder(lane: "/org/bluez/hci1") == "b")
        let waiter = Task { try await gate.acquire("c", lane: "/org/bluez/hci0") }
        #expect(await eventually { await gate.queue(lane: "/org/bluez/hci0") == ["c"] })
        await gate.release("a")                                    // no lane named: found all the same
        try await waiter.value
        #expect(await gate.holder(lane: "/org/bluez/hci0") == "c")
        #expect(await gate.holder(lane: "/org/bluez/hci1") == "b")
    }
}
