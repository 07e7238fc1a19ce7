import Glibc
import Logging
import Testing
@testable import Systemd

@Suite(.serialized) struct SystemdLogHandlerTests {
    private let noon = timespec(tv_sec: 1_795_341_600, tv_nsec: 123_456_789)  // 2026-11-22T10:00:00.123Z

    @Test(arguments: [
        (Logger.Level.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
    ])
    func syslogPriorities(level: Logger.Level, priority: Int) {
        #expect(SystemdLogHandler.syslogPriority(level) == priority)
    }

    @Test func journalLines() {
        let line = SystemdLogHandler.formatLine(output: .journal, level: .info, label: "bridge", message: "device connected",
                                                metadata: ["device": "hm10", "rssi": "-60"], timestamp: noon)
        #expect(line == "<6>device connected device=hm10 rssi=-60\n")
        let multi = SystemdLogHandler.formatLine(output: .journal, level: .error, label: "x", message: "first\nsecond",
                                                 metadata: [:], timestamp: noon)
        #expect(multi == "<3>first\n<3>second\n")
    }

    @Test func consoleLines() {
        let line = SystemdLogHandler.formatLine(output: .console, level: .info, label: "gattbridge.mqtt", message: "connected",
                                                metadata: ["broker": "mqtt://localhost:1883"], timestamp: noon)
        #expect(line == "2026-11-22T10:00:00.123Z info  [gattbridge.mqtt] connected broker=mqtt://localhost:1883\n")
        let warning = SystemdLogHandler.formatLine(output: .console, level: .warning, label: "b", message: "m",
                                                   metadata: [:], timestamp: timespec(tv_sec: 0, tv_nsec: 5_000_000))
        #expect(warning == "1970-01-01T00:00:00.005Z warning [b] m\n")
    }

    @Test func metadataValuesAreQuotedWhenNeeded() {
        let line = SystemdLogHandler.formatLine(
            output: .journal, level: .notice, label: "l", message: "m",
            metadata: ["z": "plain", "a": "two words", "q": "say \"hi\"\n", "e": "", "list": ["1", "b c"],
                       "map": ["k": "v"]],
            timestamp: noon)
        #expect(line == #"<5>m a="two words" e="" list="[1,\"b c\"]" map={k:v} q="say \"hi\"\n" z=plain"# + "\n")
    }

    @Test func journalStreamMustMatchStderr() {
        #expect(SystemdLogHandler.journalStream("8:1234", matchesDevice: 8, inode: 1234))
        #expect(!SystemdLogHandler.journalStream("8:1234", matchesDevice: 8, inode: 1235))
        #expect(!SystemdLogHandler.journalStream("garbage", matchesDevice: 8, inode: 1234))

        var info = stat()
        fstat(STDERR_FILENO, &info)
        defer { unsetenv("JOURNAL_STREAM") }
        setenv("JOURNAL_STREAM", "\(info.st_dev):\(info.st_ino)", 1)
        #expect(SystemdLogHandler.detectOutput() == .journal)
        setenv("JOURNAL_STREAM", "\(info.st_dev):\(info.st_ino + 1)", 1)
        #expect(SystemdLogHandler.detectOutput() == .console)
        unsetenv("JOURNAL_STREAM")
        #expect(SystemdLogHandler.detectOutput() == .console)
    }

    @Test func handlerWritesOneLineToStderr() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let savedStderr = dup(STDERR_FILENO)
        dup2(fds[1], STDERR_FILENO)
        var handler = SystemdLogHandler(label: "test", logLevel: .debug, output: .journal)
        handler.metadata = ["session": "42"]
        let logger = Logger(label: "test") { _ in handler }
        logger.debug("debug is logged at debug level", metadata: nil)
        logger.trace("trace is below debug")
        logger.warning("unique-marker-7f3", metadata: ["device": "hm10"])
        dup2(savedStderr, STDERR_FILENO)
        close(savedStderr)
        close(fds[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fds[0], &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        close(fds[0])
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.contains("<4>unique-marker-7f3 device=hm10 session=42"))
        #expect(lines.contains("<7>debug is logged at debug level session=42"))
        #expect(!lines.contains { $0.contains("trace is below debug") })
    }
}
