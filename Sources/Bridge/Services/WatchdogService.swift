import Logging
import ServiceLifecycle
import Systemd

/// The systemd watchdog, when the unit asks for one (`WATCHDOG_USEC`); stops petting at shutdown.
struct WatchdogService: Service {
    let loop: WatchdogLoop

    func run() async {
        await cancelWhenGracefulShutdown { await loop.run() }
    }
}

/// Keeps systemd's STATUS= line current.
struct StatusService: Service {
    let reporter: StatusReporter
    let triggers: AsyncStream<Void>

    func run() async {
        await reporter.run(triggers: triggers)
    }
}

/// Last in the group, so the first to hear of a graceful shutdown: tells systemd at once (STOPPING=1).
struct StoppingNotice: Service {
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async {
        guard (try? await gracefulShutdown()) != nil else { return }
        notifier.stopping()
        notifier.status("stopping")
        logger.notice("stopping")
    }
}
