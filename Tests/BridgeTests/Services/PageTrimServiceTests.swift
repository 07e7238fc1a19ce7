import Logging
import Synchronization
import Testing
@testable import Bridge

/// The service around `PageTrimSchedule` (whose decisions `PageTrimScheduleTests` cover): the ways a daemon settles
/// each lead to a real trim, logged. Every wait is on the log line; the other ways to get there are an hour away, so
/// a wrong trigger hangs the test rather than passing it.
@Suite(.timeLimit(.minutes(1))) struct PageTrimServiceTests {
    private static let hour = Duration.seconds(3600)

    @Test func trimsOnceEveryDeviceIsOnline() async {
        let log = RecordedLog()
        let (events, sink) = AsyncStream.makeStream(of: PageTrimSchedule.Event.self)
        let service = PageTrimService(events: events, logger: log.logger,
                                      timing: .init(settle: .zero, fallback: Self.hour, quiet: Self.hour, spacing: Self.hour))
        let running = Task { await service.run() }
        sink.yield(.allOnline)
        let line = await log.first { $0.hasPrefix("start-up page trim: released ") }
        #expect(line.contains(" read-only file mappings (RSS "))
        running.cancel()
        await running.value
    }

    @Test func trimsAfterTheFallbackWhenDevicesNeverAllComeOnline() async {
        let log = RecordedLog()
        let (events, _) = AsyncStream.makeStream(of: PageTrimSchedule.Event.self)
        let service = PageTrimService(events: events, logger: log.logger,
                                      timing: .init(settle: .zero, fallback: .zero, quiet: Self.hour, spacing: Self.hour))
        let running = Task { await service.run() }
        _ = await log.first { $0.hasPrefix("start-up page trim: released ") }
        running.cancel()
        await running.value
    }

    @Test func trimsAgainOnceChangesSettle() async {
        let log = RecordedLog()
        let (events, sink) = AsyncStream.makeStream(of: PageTrimSchedule.Event.self)
        let service = PageTrimService(events: events, logger: log.logger,
                                      timing: .init(settle: .zero, fallback: .zero, quiet: .zero, spacing: .zero))
        let running = Task { await service.run() }
        _ = await log.first { $0.hasPrefix("start-up page trim: released ") }
        sink.yield(.changed)
        let line = await log.first { $0.hasPrefix("page trim after changes settled: released ") }
        #expect(line.contains(" read-only file mappings (RSS ") && line.hasSuffix(" KiB)"))
        #expect(log.messages.filter { $0.hasPrefix("start-up page trim") }.count == 1)
        running.cancel()
        await running.value
    }
}

/// A logger whose messages (debug and above) are kept for the test, and can be waited for.
private final class RecordedLog: Sendable {
    private let store = Mutex<[String]>([])
    private let feed: AsyncStream<String>
    private let sink: AsyncStream<String>.Continuation
    var messages: [String] { store.withLock { $0 } }

    init() { (feed, sink) = AsyncStream.makeStream(of: String.self) }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    /// The first message that matches, waiting for it (a test that never sees one hangs, and fails by its time limit).
    func first(where matches: (String) -> Bool) async -> String {
        for await message in feed where matches(message) { return message }
        return ""
    }

    fileprivate func append(_ message: String) {
        store.withLock { $0.append(message) }
        sink.yield(message)
    }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(event.message.description)
        }
    }
}
