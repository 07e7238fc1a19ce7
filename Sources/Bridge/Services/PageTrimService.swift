import Logging
import ServiceLifecycle
import Systemd

/// Runs `StartupPageTrim` whenever `PageTrimSchedule` says so: once the daemon has settled after start-up, then again
/// once it has settled after later one-time work (docs/dev/MEMORY.md). The daemon's resident set then holds what its
/// steady state runs, not everything it ever ran. Never for the CLI's commands; `GATTBRIDGE_NO_TRIM=1` turns every trim
/// off. A trim is a few milliseconds of system calls on /proc and `madvise`, nothing that waits, so it runs on the pool.
struct PageTrimService: Service {
    let events: AsyncStream<PageTrimSchedule.Event>
    let logger: Logger
    var timing = PageTrimSchedule.Timing()

    private enum Input: Sendable {
        case event(PageTrimSchedule.Event)
        case timer
    }

    func run() async {
        guard !StartupPageTrim.isDisabled else {
            logger.debug("start-up page trim off (GATTBRIDGE_NO_TRIM=1)")
            return
        }
        let clock = ContinuousClock()
        let start = clock.now
        // The schedule's events and the one timer, in one stream: the loop below is the schedule's only owner.
        let (inputs, sink) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(64))
        await cancelWhenGracefulShutdown { [events, timing] in
            var schedule = PageTrimSchedule(timing: timing, start: start)
            var timer: Task<Void, Never>?
            var armed: ContinuousClock.Instant?
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await event in events { sink.yield(.event(event)) }
                }
                sink.yield(.timer)      // arms the start-up deadline
                for await input in inputs {
                    let now = clock.now
                    if case .event(let event) = input { schedule.handle(event, now: now) }
                    if let kind = schedule.due(now: now) { trim(kind) }
                    guard schedule.deadline != armed else { continue }
                    timer?.cancel()
                    armed = schedule.deadline
                    timer = armed.map { deadline in
                        Task { if (try? await clock.sleep(until: deadline)) != nil { sink.yield(.timer) } }
                    }
                }
                group.cancelAll()
            }
            timer?.cancel()
        }
        sink.finish()
    }

    /// Logs before the trim (`StartupPageTrim.Plan` says why); only a failure is logged after it, a rare path.
    private func trim(_ kind: PageTrimSchedule.Kind) {
        // What start-up (or the work that settled) freed goes back with the file pages (`HeapTrim`).
        HeapTrim.release()
        let outcome = StartupPageTrim.run { plan in
            let summary = "released \(plan.releasableKiB) KiB from \(plan.mappings.count) read-only file mappings (RSS \(plan.rssBeforeKiB) -> \(plan.rssAfterKiB) KiB)"
            switch kind {
            case .startup:
                logger.info("start-up page trim: \(summary)")
                logger.debug("their pages fault back \(plan.faultAroundOff ? "one at a time (fault-around off)" : "64 KiB at a time (fault-around on)")")
            case .settled: logger.debug("page trim after changes settled: \(summary)")
            }
        }
        guard let outcome else {
            logger.debug("page trim skipped: /proc/self/smaps unreadable")
            return
        }
        if outcome.faultAroundKept > 0 {
            logger.debug("page trim: \(outcome.faultAroundKept) mappings keep fault-around (registration refused)")
        }
        if outcome.failed > 0 {
            logger.notice("page trim: madvise refused \(outcome.failed) of \(outcome.failed + outcome.mappings) mappings; they stay resident")
        }
    }
}
