import Logging
import Synchronization
import Testing
@testable import Bridge

/// When the trim runs: both ways a daemon settles lead to exactly one trim. Each test waits for `run()` to return,
/// which it does only after trimming; the other way to get there is an hour away, so a wrong trigger hangs the test.
@Suite struct StartupTrimServiceTests {
    @Test func trimsOnceEveryDeviceIsOnline() async {
        let log = RecordedLog()
        let (allOnline, trigger) = AsyncStream.makeStream(of: Void.self)
        trigger.yield()
        await StartupTrimService(allOnline: allOnline, logger: log.logger, settle: .zero, fallback: .seconds(3600)).run()
        #expect(log.messages.filter { $0.hasPrefix("start-up page trim: released ") }.count == 1)
    }

    @Test func trimsAfterTheFallbackWhenDevicesNeverAllComeOnline() async {
        let log = RecordedLog()
        let (allOnline, trigger) = AsyncStream.makeStream(of: Void.self)
        await StartupTrimService(allOnline: allOnline, logger: log.logger, settle: .zero, fallback: .zero).run()
        #expect(log.messages.filter { $0.hasPrefix("start-up page trim: released ") }.count == 1)
        trigger.finish()
    }
}

/// A logger whose messages (info and above) are kept for the test.
private final class RecordedLog: Sendable {
    private let store = Mutex<[String]>([])
    var messages: [String] { store.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    fileprivate func append(_ message: String) { store.withLock { $0.append(message) } }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(event.message.description)
        }
    }
}
