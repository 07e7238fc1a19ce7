import Testing
@testable import BridgeModel
@testable import BridgeSession

@Suite struct CommandSchedulerTests {
    let t0 = ContinuousClock.now

    func set(_ id: UInt64, _ channel: String = "led", at offset: Duration = .zero, ttl: Duration = .seconds(30)) -> DeviceCommand {
        DeviceCommand(id: id, channel: channel, kind: .set([UInt8(truncatingIfNeeded: id)]), topic: "b/d/\(channel)/set", payload: [1],
                      arrival: t0 + offset, ttl: ttl)
    }

    func get(_ id: UInt64, _ channel: String = "led", reply: String? = nil, at offset: Duration = .zero) -> DeviceCommand {
        DeviceCommand(id: id, channel: channel, kind: .get, topic: "b/d/\(channel)/get", arrival: t0 + offset,
                      replies: reply.map { [ReplyTarget(topic: $0)] } ?? [])
    }

    @Test func runsOneAtATimeInArrivalOrder() {
        var scheduler = CommandScheduler()
        for id in 1...3 { #expect(scheduler.submit(set(UInt64(id))).isEmpty) }
        let first = scheduler.next(now: t0, online: true)
        #expect(first.run?.id == 1)
        #expect(scheduler.next(now: t0, online: true).run == nil, "one in flight at a time")
        #expect(scheduler.finish(1, .done) == [.completed(set(1))])
        #expect(scheduler.next(now: t0, online: true).run?.id == 2)
        _ = scheduler.finish(2, .done)
        #expect(scheduler.next(now: t0, online: true).run?.id == 3)
    }

    @Test func waitsWhileOfflineAndExpiresAtTheTTL() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(set(1, ttl: .seconds(5)))
        _ = scheduler.submit(set(2, at: .seconds(1), ttl: .seconds(30)))
        #expect(scheduler.next(now: t0 + .seconds(1), online: false).run == nil)
        #expect(scheduler.nextDeadline == t0 + .seconds(5))
        let later = scheduler.next(now: t0 + .seconds(5), online: false)
        #expect(later.run == nil)
        #expect(later.expired.map(\.command.id) == [1])
        #expect(scheduler.next(now: t0 + .seconds(6), online: true).run?.id == 2)
    }

    @Test func ttlIsCheckedAgainRightBeforeRunning() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(set(1, ttl: .seconds(1)))
        // Online, but the command waited behind others past its ttl: it must not run.
        let step = scheduler.next(now: t0 + .seconds(2), online: true)
        #expect(step.run == nil)
        #expect(step.expired.map(\.command.id) == [1])
    }

    @Test func getsForOneChannelAreCoalescedIntoThePendingOne() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(get(1, reply: "r1"))
        for id in 2...2000 { #expect(scheduler.submit(get(UInt64(id))).isEmpty) }
        _ = scheduler.submit(get(2001, reply: "r2"))
        _ = scheduler.submit(get(2002, "battery"))
        #expect(scheduler.pendingCount == 2, "one get per channel")
        let running = scheduler.next(now: t0, online: true).run
        #expect(running?.id == 1)
        #expect(running?.replies.map(\.topic) == ["r1", "r2"])
        // A get arriving while the channel's get runs joins it too.
        _ = scheduler.submit(get(2003, reply: "r3"))
        #expect(scheduler.pendingCount == 1)
        guard case .completed(let done)? = scheduler.finish(1, .done).first else { Issue.record("no completion"); return }
        #expect(done.replies.map(\.topic) == ["r1", "r2", "r3"])
    }

    @Test func aSetAfterAGetFloodRunsSecond() {
        var scheduler = CommandScheduler()
        for id in 1...500 { _ = scheduler.submit(get(UInt64(id))) }
        _ = scheduler.submit(set(501))
        #expect(scheduler.next(now: t0, online: true).run?.isGet == true)
        _ = scheduler.finish(1, .done)
        #expect(scheduler.next(now: t0, online: true).run?.id == 501)
    }

    @Test func aLinkLossHoldsTheQueueAndRetriesTheCommandFirstAfterReconnecting() {
        var scheduler = CommandScheduler()
        scheduler.linkUp()
        _ = scheduler.submit(set(1))
        _ = scheduler.submit(set(2))
        #expect(scheduler.next(now: t0, online: true).run?.id == 1)
        #expect(scheduler.finish(1, .linkLost(partial: false)).isEmpty)
        #expect(scheduler.held)
        #expect(scheduler.next(now: t0, online: true).run == nil, "held until the link is back")
        scheduler.linkUp()
        #expect(scheduler.next(now: t0, online: true).run?.id == 1, "the interrupted command goes first")
    }

    @Test func aFailureReportedAfterTheReconnectionDoesNotHoldTheQueue() {
        var scheduler = CommandScheduler()
        scheduler.linkUp()
        _ = scheduler.submit(set(1))
        _ = scheduler.next(now: t0, online: true)
        scheduler.linkUp()                          // reconnected before the write's failure came back
        _ = scheduler.finish(1, .linkLost(partial: false))
        #expect(!scheduler.held)
        #expect(scheduler.next(now: t0, online: true).run?.id == 1)
    }

    @Test func aPartialTextWriteIsReportedNotResent() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(set(1, "serial"))
        _ = scheduler.next(now: t0, online: true)
        let verdicts = scheduler.finish(1, .linkLost(partial: true))
        guard case .rejected(let command, let reason)? = verdicts.first else { Issue.record("not rejected"); return }
        #expect(command.id == 1)
        #expect(reason.contains("partial write"))
        #expect(scheduler.isIdle)
    }

    @Test func fullQueueDropsTheOldest() {
        var scheduler = CommandScheduler(capacity: 2)
        _ = scheduler.submit(set(1))
        _ = scheduler.submit(set(2))
        let verdicts = scheduler.submit(set(3))
        #expect(verdicts.map(\.command.id) == [1])
        #expect(scheduler.waiting.map(\.id) == [2, 3])
    }

    @Test func drainReportsEverythingNotRunning() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(set(1))
        _ = scheduler.submit(set(2))
        _ = scheduler.next(now: t0, online: true)
        #expect(scheduler.drain(reason: "stopping").map(\.command.id) == [2])
        #expect(scheduler.running?.id == 1)
    }

    @Test func aStaleFinishChangesNothing() {
        var scheduler = CommandScheduler()
        _ = scheduler.submit(set(1))
        _ = scheduler.next(now: t0, online: true)
        #expect(scheduler.finish(99, .done).isEmpty)
        #expect(scheduler.running?.id == 1)
    }
}

extension CommandScheduler.Verdict {
    var command: DeviceCommand {
        switch self {
        case .rejected(let command, _), .completed(let command): command
        }
    }
}
