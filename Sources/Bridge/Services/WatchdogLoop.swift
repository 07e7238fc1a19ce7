import Logging
import Systemd

/// Pets the systemd watchdog once per interval, and only on a `.live` verdict from the health check: there is no
/// timer that pets on its own, so a loop that hangs silences the pets and systemd restarts the daemon.
struct WatchdogLoop: Sendable {
    let interval: Duration
    let health: HealthCheck
    let notifier: SystemdNotifier
    let logger: Logger

    /// Runs until the task is cancelled. Ticks stay on a fixed grid (start + n × interval), so the probe's own
    /// duration does not stretch the period towards the timeout.
    func run() async {
        let clock = ContinuousClock()
        var next = clock.now
        var failing = false
        while !Task.isCancelled {
            switch await health.probe(deadline: interval) {
            case .live:
                notifier.watchdog()
                if failing { logger.notice("liveness restored; petting the watchdog again") }
                failing = false
            case .stuck(let why):
                logger.error("not petting the watchdog: \(why)")
                failing = true
            }
            next += interval
            let now = clock.now
            if next < now { next = now }  // a probe that overran: start a new grid rather than pet in a burst
            try? await Task.sleep(until: next, clock: clock)
        }
    }
}
