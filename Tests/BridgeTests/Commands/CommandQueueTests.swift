import Testing
@testable import Bridge

@Suite struct CommandQueueTests {
    let t0 = ContinuousClock.now

    func command(_ channel: String, at offset: Duration, ttl: Duration = .seconds(30)) -> PendingCommand {
        PendingCommand(channel: channel, payload: Array(channel.utf8), arrival: t0 + offset, ttl: ttl)
    }

    @Test func popsInArrivalOrder() {
        var queue = CommandQueue()
        for (i, name) in ["a", "b", "c"].enumerated() { #expect(queue.enqueue(command(name, at: .seconds(i))) == nil) }
        #expect(queue.count == 3)
        #expect(queue.popReady()?.channel == "a")
        #expect(queue.popReady()?.channel == "b")
        #expect(queue.popReady()?.channel == "c")
        #expect(queue.popReady() == nil)
        #expect(queue.isEmpty)
    }

    @Test func expiresOldCommandsInArrivalOrderAndKeepsTheRest() {
        var queue = CommandQueue()
        _ = queue.enqueue(command("slow", at: .zero, ttl: .seconds(60)))
        _ = queue.enqueue(command("first", at: .seconds(1), ttl: .seconds(10)))
        _ = queue.enqueue(command("second", at: .seconds(2), ttl: .seconds(5)))
        _ = queue.enqueue(command("fresh", at: .seconds(20), ttl: .seconds(10)))
        #expect(queue.nextDeadline == t0 + .seconds(7))

        #expect(queue.expire(now: t0 + .seconds(6)).isEmpty)
        // At the deadline itself a command counts as expired.
        #expect(queue.expire(now: t0 + .seconds(7)).map(\.channel) == ["second"])
        #expect(queue.expire(now: t0 + .seconds(25)).map(\.channel) == ["first"])
        #expect(queue.nextDeadline == t0 + .seconds(30))
        #expect(queue.commands.map(\.channel) == ["slow", "fresh"])
        #expect(queue.expire(now: t0 + .seconds(100)).map(\.channel) == ["slow", "fresh"])
        #expect(queue.nextDeadline == nil)
    }

    @Test func flushAfterReconnectWritesSurvivorsInOrder() {
        var queue = CommandQueue()
        _ = queue.enqueue(command("old", at: .zero, ttl: .seconds(30)))
        _ = queue.enqueue(command("mid", at: .seconds(10), ttl: .seconds(30)))
        _ = queue.enqueue(command("new", at: .seconds(35), ttl: .seconds(30)))
        let now = t0 + .seconds(36)
        #expect(queue.expire(now: now).map(\.channel) == ["old"])
        var written: [String] = []
        while let next = queue.popReady() { written.append(next.channel) }
        #expect(written == ["mid", "new"])
    }

    @Test func fullQueueDropsTheOldest() {
        var queue = CommandQueue(capacity: 2)
        #expect(queue.enqueue(command("a", at: .zero)) == nil)
        #expect(queue.enqueue(command("b", at: .seconds(1))) == nil)
        #expect(queue.enqueue(command("c", at: .seconds(2)))?.channel == "a")
        #expect(queue.commands.map(\.channel) == ["b", "c"])
    }

    @Test func removeAllReturnsWhatWasPending() {
        var queue = CommandQueue()
        _ = queue.enqueue(command("a", at: .zero))
        _ = queue.enqueue(command("b", at: .seconds(1)))
        #expect(queue.removeAll().map(\.channel) == ["a", "b"])
        #expect(queue.isEmpty)
    }

    @Test func pendingCommandDeadline() {
        let c = command("x", at: .seconds(5), ttl: .seconds(30))
        #expect(c.deadline == t0 + .seconds(35))
        #expect(!c.isExpired(at: t0 + .seconds(34)))
        #expect(c.isExpired(at: t0 + .seconds(35)))
        #expect(c.payload == [0x78])
    }
}
