import Glibc

/// A private mosquitto for one test: its own port and config in a temp dir, stopped and restarted at will.
/// Spawned with posix_spawn and an empty signal mask: a child inheriting a Swift worker thread's mask would ignore
/// SIGTERM.
final class TestBroker: @unchecked Sendable {
    let port: UInt16
    let directory: String
    private var pid: pid_t = 0

    /// `prepare` runs in the broker's directory before the first start (e.g. to make certificates).
    init(extraConfig: [String] = [], prepare: (String) throws -> Void = { _ in }) throws {
        port = try Self.freePort()
        var template = Array("/tmp/mqtt-test-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw TestFailure("mkdtemp failed") }
        directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        chmod(directory, 0o755)  // mosquitto drops root privileges before some reads
        let config = (["listener \(port) 127.0.0.1", "allow_anonymous true", "persistence false"] + extraConfig)
            .map { $0.replacing("$DIR", with: directory) }.joined(separator: "\n") + "\n"
        try writeFile("\(directory)/mosquitto.conf", config)
        try prepare(directory)
        try start()
    }

    deinit {
        stop()
        _ = system("rm -rf '\(directory)'")
    }

    var isRunning: Bool { pid != 0 }

    func start() throws {
        precondition(pid == 0)
        pid = try spawn(["/usr/sbin/mosquitto", "-c", "\(directory)/mosquitto.conf"], log: "\(directory)/broker.log")
        let deadline = MonotonicTestClock.now + 5_000
        while !Self.accepts(port: port) {
            guard MonotonicTestClock.now < deadline else { throw TestFailure("mosquitto did not start: \(log)") }
            usleep(10_000)
        }
    }

    func stop() {
        guard pid != 0 else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// SIGSTOP: the TCP connections stay up but nothing is read or acknowledged (a stalled broker).
    func pause() { if pid != 0 { kill(pid, SIGSTOP) } }

    func resume() { if pid != 0 { kill(pid, SIGCONT) } }

    var log: String { (try? readFile("\(directory)/broker.log")) ?? "" }

    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw TestFailure("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum MonotonicTestClock {
    /// Milliseconds.
    static var now: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

/// Starts `arguments` with default signal handling and an empty mask, stdout and stderr to `log`.
func spawn(_ arguments: [String], log: String) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
    guard rc == 0 else { throw TestFailure("posix_spawn \(arguments[0]): \(String(cString: strerror(rc)))") }
    return pid
}

/// Runs a shell command to completion; throws unless it exits 0.
func shell(_ command: String) throws {
    let pid = try spawn(["/bin/sh", "-c", command], log: "/dev/null")
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    guard status == 0 else { throw TestFailure("failed (\(status)): \(command)") }
}

func writeFile(_ path: String, _ text: String) throws {
    guard let file = fopen(path, "w") else { throw TestFailure("cannot write \(path)") }
    fputs(text, file)
    fclose(file)
}

func readFile(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else { throw TestFailure("cannot read \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
