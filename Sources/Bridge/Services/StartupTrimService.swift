import Logging
import ServiceLifecycle
import Systemd

/// Runs `StartupPageTrim` once the daemon has settled, so its resident set holds what the steady state runs rather
/// than everything start-up touched. Settled means: `settle` after every configured device first came online (so
/// what connecting them ran — GATT discovery, Home Assistant configs, the retained states — is done, and only the
/// notification and command paths fault back in), or `settle` after `fallback` when that does not happen (no device,
/// a device away). Once per process, never for the CLI's commands; `GATTBRIDGE_NO_TRIM=1` turns it off. The trim itself
/// is a few milliseconds of system calls on /proc and `madvise`, nothing that waits, so it runs on the pool.
struct StartupTrimService: Service {
    let allOnline: AsyncStream<Void>
    let logger: Logger
    var settle: Duration = .seconds(5)
    var fallback: Duration = .seconds(60)

    func run() async {
        guard !StartupPageTrim.isDisabled else {
            logger.debug("start-up page trim off (GATTBRIDGE_NO_TRIM=1)")
            return
        }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in allOnline { return } }
                group.addTask { [fallback] in try? await Task.sleep(for: fallback) }
                await group.next()
                group.cancelAll()
            }
            guard (try? await Task.sleep(for: settle)) != nil else { return }
            guard let outcome = StartupPageTrim.run() else {
                logger.debug("start-up page trim skipped: /proc/self/smaps unreadable")
                return
            }
            logger.info("start-up page trim: released \(outcome.releasedKiB) KiB from \(outcome.mappings) read-only file mappings (RSS \(outcome.rssBeforeKiB) -> \(outcome.rssAfterKiB) KiB)",
                        metadata: outcome.failed > 0 ? ["failed": "\(outcome.failed)"] : [:])
        }
    }
}
