import Glibc

/// A private system bus with a real avahi-daemon on it, in a network namespace of its own whose loopback carries
/// multicast, so the test neither needs nor disturbs the machine's mDNS. avahi-daemon's pid file lives in a private
/// tmpfs mount there too. Needs root (unshare) and Debian's avahi-daemon and avahi-utils.
final class AvahiBench: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static let daemonPath = "/usr/sbin/avahi-daemon"
    /// bench/avahi-daemon.conf, shared with the proxy's mDNS test (Tests/proxy).
    static let configPath: String = {
        var path = "\(#filePath)"
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/bench/avahi-daemon.conf"
    }()
    static let browsePath = "/usr/bin/avahi-browse"
    static let publishPath = "/usr/bin/avahi-publish"

    /// Why the bench cannot run here, or nil.
    static var unavailableReason: String? {
        if access(daemonPath, X_OK) != 0 || access(browsePath, X_OK) != 0 || access(publishPath, X_OK) != 0 {
            return "avahi-daemon and avahi-utils are not installed (apt-get install avahi-daemon avahi-utils)"
        }
        if geteuid() != 0 { return "the avahi bench needs root for its network namespace (unshare -m -n)" }
        return nil
    }

    let directory: String
    let address: String
    private var busPID: pid_t = 0
    private var avahiPID: pid_t = 0
    private var helpers: [pid_t] = []

    init() throws {
        var template = Array("/tmp/avahitest.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
        directory = String(cString: made)
        try Self.write(directory + "/bus.conf", """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """)
        let (pid, output) = try Self.spawn(["dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile",
                                            "--print-address=1"], environment: [], stderrToNull: true)
        busPID = pid
        defer { close(output) }
        var line = [UInt8]()
        var byte: UInt8 = 0
        while read(output, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        address = String(decoding: line, as: UTF8.self)
        if address.isEmpty {
            stop()
            throw Failure(description: "dbus-daemon printed no address")
        }
    }

    var environment: [String] { ["DBUS_SYSTEM_BUS_ADDRESS=\(address)", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"] }

    /// Starts avahi-daemon (once its D-Bus name is taken it announces; the caller waits on that).
    func startAvahi() throws {
        precondition(avahiPID == 0)
        let script = "ip link set lo up && ip link set lo multicast on && mkdir -p /run/avahi-daemon && "
            + "mount -t tmpfs tmpfs /run/avahi-daemon && exec \(Self.daemonPath) --no-drop-root --no-chroot "
            + "--no-rlimits --no-proc-title -f \(Self.configPath)"
        let (pid, output) = try Self.spawn(["unshare", "-m", "-n", "sh", "-c", script], environment: environment,
                                           stdoutTo: directory + "/avahi.log")
        close(output)
        avahiPID = pid
    }

    func stopAvahi() {
        guard avahiPID > 0 else { return }
        Self.terminate(avahiPID)
        avahiPID = 0
    }

    /// `avahi-publish -s NAME TYPE PORT`, running until `stop()`: a rival for the name.
    func publish(name: String, type: String, port: Int) throws {
        let (pid, output) = try Self.spawn([Self.publishPath, "-s", name, type, String(port)], environment: environment,
                                           stdoutTo: directory + "/publish.log")
        close(output)
        helpers.append(pid)
    }

    /// The resolved services of `type` as `avahi-browse -rpt` lists them: (name, port, TXT strings).
    func browse(_ type: String) throws -> [(name: String, port: Int, txt: [String])] {
        let (pid, output) = try Self.spawn([Self.browsePath, "-rpt", type], environment: environment, stderrToNull: true)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(output, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        close(output)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            // =;lo;IPv4;NAME;TYPE;local;HOST;ADDRESS;PORT;"k=v" "k=v"
            let fields = line.split(separator: ";", omittingEmptySubsequences: false)
            guard fields.count >= 10, fields[0] == "=", let port = Int(fields[8]) else { return nil }
            let txt = Self.quotedStrings(fields[9...].joined(separator: ";"))
            return (String(fields[3]), port, txt)
        }
    }

    func stop() {
        for pid in helpers { Self.terminate(pid) }
        helpers = []
        stopAvahi()
        if busPID > 0 { Self.terminate(busPID) }
        busPID = 0
    }

    deinit {
        stop()
        for name in ["bus.conf", "bus", "avahi.log", "publish.log"] { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    /// `"k=v" "k2=v2"`: the strings between quotes (the bench's values hold no quotes).
    private static func quotedStrings(_ text: String) -> [String] {
        var result: [String] = [], current = "", inside = false
        for character in text {
            if character == "\"" {
                if inside { result.append(current) }
                current = ""
                inside.toggle()
            } else if inside {
                current.append(character)
            }
        }
        return result
    }

    private static func terminate(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    private static func write(_ path: String, _ text: String) throws {
        guard let file = fopen(path, "w") else { throw Failure(description: "cannot write \(path)") }
        fputs(text, file)
        fclose(file)
    }

    /// posix_spawnp with an empty signal mask (see Tests/DBusTests/PrivateBus.swift) and stdout on a pipe (returned)
    /// or in a file.
    private static func spawn(_ arguments: [String], environment: [String], stdoutTo file: String? = nil,
                              stderrToNull: Bool = false) throws -> (pid_t, Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Failure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, fds[0])
        if let file {
            posix_spawn_file_actions_addopen(&actions, 1, file, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
            if stderrToNull { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        }
        posix_spawn_file_actions_addclose(&actions, fds[1])
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
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        let inherited = environment.isEmpty ? Self.currentEnvironment : environment
        var envp: [UnsafeMutablePointer<CChar>?] = inherited.map { strdup($0) } + [nil]
        defer { for entry in envp { free(entry) } }
        var child = pid_t()
        let rc = posix_spawnp(&child, arguments[0], &actions, &attributes, &argv, &envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw Failure(description: "cannot start \(arguments[0]): \(String(cString: strerror(rc)))")
        }
        return (child, fds[0])
    }

    private static var currentEnvironment: [String] {
        var result: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            result.append(String(cString: entry))
            pointer += 1
        }
        return result
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Waits for `condition` to hold, checking every 100 ms, failing after `seconds` (the bench's processes answer in
/// their own time; this is a deadline, not a synchronisation).
func waitUntil(_ seconds: Double = 10, _ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
        if try await condition() { return }
        guard ContinuousClock.now < deadline else { throw TimedOut(description: "\(what): not within \(seconds) s") }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// The next event of `events` that `matches`, within `seconds`.
func nextEvent<T: Sendable>(_ events: AsyncStream<T>, _ seconds: Double = 10, _ what: String,
                            where matches: @escaping @Sendable (T) -> Bool) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            for await event in events where matches(event) { return event }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let event = first else {
            throw TimedOut(description: "\(what): not within \(seconds) s")
        }
        return event
    }
}
