import Glibc

/// A throw-away dbus-daemon for one test. Spawned with posix_spawn and an empty signal mask: children of threads
/// that block signals (Foundation.Process from async code) would ignore SIGTERM and outlive the test.
final class PrivateBus: @unchecked Sendable {
    struct SpawnError: Error, CustomStringConvertible { var description: String }

    let address: String
    private let directory: String
    private var pid: pid_t

    init() throws {
        var template = Array("/tmp/dbustest.XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw SpawnError(description: "mkdtemp failed") }
        directory = String(cString: dir)
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configPath = directory + "/bus.conf"
        guard let file = fopen(configPath, "w") else { throw SpawnError(description: "cannot write \(configPath)") }
        fputs(config, file)
        fclose(file)

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SpawnError(description: "pipe failed") }
        defer { close(fds[0]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)   // "cannot raise fd limit" noise

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let arguments = ["dbus-daemon", "--config-file=" + configPath, "--nofork", "--nopidfile",
                         "--print-address=\(fds[1])"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var child = pid_t()
        let rc = posix_spawnp(&child, "dbus-daemon", &actions, &attributes, &argv, environ)
        close(fds[1])
        guard rc == 0 else { throw SpawnError(description: "posix_spawnp dbus-daemon failed: \(rc)") }
        pid = child

        // The daemon prints its address once it listens.
        var line = [UInt8]()
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        address = String(decoding: line, as: UTF8.self)
        if address.isEmpty {
            stop()
            throw SpawnError(description: "dbus-daemon printed no address")
        }
    }

    /// Kills the daemon (SIGTERM) and reaps it; idempotent.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    deinit {
        stop()
        unlink(directory + "/bus.conf")
        unlink(directory + "/bus")
        rmdir(directory)
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body`, failing with `TimedOut` if it takes longer than `seconds` (a guard against hangs, not a sync).
func withDeadline<T: Sendable>(_ seconds: Double = 5, _ what: String = "operation",
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(description: "\(what) did not finish within \(seconds) s")
        }
        return value
    }
}
