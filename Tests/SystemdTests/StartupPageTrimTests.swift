import Glibc
import Testing
@testable import Systemd

@Suite struct StartupPageTrimTests {
    /// The shapes /proc/PID/smaps shows: the binary's code, its relocated read-only data (anonymous copies), its
    /// writable data, a shared library, the heap, an anonymous mapping, the vDSO, a shared file mapping, a device.
    private let smaps = """
        55d0a0000000-55d0a0100000 r--p 00000000 08:01 1234                       /usr/bin/gattbridge
        Size:               1024 kB
        Rss:                 300 kB
        Anonymous:             0 kB
        VmFlags: rd mr mw me dw sd
        55d0a0100000-55d0a0d00000 r-xp 00100000 08:01 1234                       /usr/bin/gattbridge
        Size:              12288 kB
        Rss:                6000 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me dw sd
        55d0a0d00000-55d0a0e00000 r--p 00d00000 08:01 1234                       /usr/bin/gattbridge
        Size:               1024 kB
        Rss:                 800 kB
        Anonymous:           420 kB
        55d0a0e00000-55d0a1000000 rw-p 00e00000 08:01 1234                       /usr/bin/gattbridge
        Rss:                1200 kB
        Anonymous:           176 kB
        7f0000000000-7f0000100000 r-xp 00028000 08:01 99                         /usr/lib/x86_64-linux-gnu/libc.so.6
        Rss:                1400 kB
        Anonymous:             0 kB
        7f0000200000-7f0000210000 ---p 00000000 00:00 0
        Rss:                   0 kB
        55d0a2000000-55d0a2021000 rw-p 00000000 00:00 0                          [heap]
        Rss:                  12 kB
        Anonymous:            12 kB
        7f0000300000-7f0000400000 r--p 00000000 00:00 0
        Rss:                   8 kB
        Anonymous:             0 kB
        7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
        Rss:                   4 kB
        Anonymous:             0 kB
        7f0000500000-7f0000600000 r--s 00000000 08:01 77                         /var/lib/some file.db
        Rss:                  40 kB
        Anonymous:             0 kB
        7f0000600000-7f0000700000 r--p 00000000 00:05 6                          /dev/zero
        Rss:                  40 kB
        Anonymous:             0 kB
        7f0000700000-7f0000800000 r--p 00000000 08:01 78                         /opt/with space/lib.so
        Rss:                   0 kB
        Anonymous:             0 kB
        """

    @Test func onlyPrivateReadOnlyFileMappingsWithoutAnonymousPages() {
        let found = StartupPageTrim.candidates(smaps: smaps)
        #expect(found == [
            .init(start: 0x55d0a0000000, end: 0x55d0a0100000, residentKiB: 300, path: "/usr/bin/gattbridge"),
            .init(start: 0x55d0a0100000, end: 0x55d0a0d00000, residentKiB: 6000, path: "/usr/bin/gattbridge"),
            .init(start: 0x7f0000000000, end: 0x7f0000100000, residentKiB: 1400,
                  path: "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            // Nothing resident yet, but its first fault should already be one page.
            .init(start: 0x7f0000700000, end: 0x7f0000800000, residentKiB: 0, path: "/opt/with space/lib.so"),
        ])
    }

    @Test func pathsWithSpacesAreKeptWhole() {
        let text = """
            7f0000700000-7f0000800000 r--p 00000000 08:01 78                         /opt/with space/lib.so
            Rss:                   4 kB
            Anonymous:             0 kB
            """
        #expect(StartupPageTrim.candidates(smaps: text).map(\.path) == ["/opt/with space/lib.so"])
    }

    /// The measurements on the running kernel (`KernelTrimTests`), in a test process of their own. A trim advises
    /// every read-only file mapping of the process: in the shared test process another test's `mmap`, `munmap` or
    /// trim between its read of smaps and its `madvise` calls made a call fail or a registration be refused, and
    /// another trim dropped the page being measured, so they failed now and then. Alone, nothing else maps or trims.
    @Test(.enabled(if: !TrimTestChild.active), .timeLimit(.minutes(3)))
    func onTheRunningKernelInAProcessOfTheirOwn() async throws {
        let log = "/tmp/gattbridge-trim-test-\(getpid()).log"
        defer { unlink(log) }
        let status = try await Self.runSelf(["--testing-library", "swift-testing", "--filter", "KernelTrimTests"], log: log)
        let output = Self.contents(of: log)
        #expect(status == 0, "the kernel trim tests in their own process exited \(status):\n\(output)")
        // Both ran and passed: a filter that matched nothing, or tests skipped, would exit 0 as well.
        #expect(output.contains("writtenPagesSurviveAndCleanOnesAreDropped() passed"), "\(output)")
        #expect(output.contains("aTrimmedMappingFaultsBackOnePageAtATime() passed"), "\(output)")
    }

    @Test func residentSizeIsRead() {
        #expect(StartupPageTrim.residentKiB() > 0)
    }

    static func mapping(at start: UInt) -> StartupPageTrim.Mapping? {
        guard let fd = Optional(open("/proc/self/smaps", O_RDONLY)), fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }), count > 0 {
            bytes.append(contentsOf: buffer[0..<count])
        }
        return StartupPageTrim.candidates(smaps: String(decoding: bytes, as: UTF8.self)).first { $0.start == start }
    }

    /// This test binary again (`/proc/self/exe`) with `arguments`, the child marker set, output to `log`; its exit
    /// status (waitpid's). Waited for without blocking a thread: the test runs on Swift's cooperative pool, one
    /// thread per core, and a thread blocked in waitpid while a loaded machine slowed the child starved the other
    /// suites' waits past their deadlines.
    private static func runSelf(_ arguments: [String], log: String) async throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process: a pipe or socket of another test's, inherited, would not see its end until
        // the child exited, and that test (and whatever waits on it) would wait as long.
        // (glibc 2.34+; the Glibc module does not declare it.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        let closeFrom = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"))
        try #require(unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3) == 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var environment: [String] = ["\(TrimTestChild.variable)=1"]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if !text.hasPrefix("\(TrimTestChild.variable)=") { environment.append(text) }
            entry += 1
        }
        let exe = "/proc/self/exe"
        var argv: [UnsafeMutablePointer<CChar>?] = ([exe] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, exe, &actions, &attributes, &argv, &envp)
        try #require(rc == 0, "posix_spawn: \(String(cString: strerror(rc)))")
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { return status }
            if reaped < 0 && errno != EINTR { throw TrimTestFailure("waitpid: \(String(cString: strerror(errno)))") }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                kill(pid, SIGKILL)      // the time limit cancelled the test: no child left behind
                waitpid(pid, &status, 0)
                throw error
            }
        }
    }

    private static func contents(of path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = buffer.withUnsafeMutableBytes({ Glibc.read(fd, $0.baseAddress, $0.count) }), count > 0 {
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

struct TrimTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Whether this process is the child that runs `KernelTrimTests`.
enum TrimTestChild {
    static let variable = "GATTBRIDGE_TRIM_TEST_CHILD"
    static var active: Bool { getenv(variable).map { String(cString: $0) == "1" } ?? false }
}

/// The trims on the running kernel. They run only in the child `onTheRunningKernelInAProcessOfTheirOwn` starts
/// (`GATTBRIDGE_TRIM_TEST_CHILD=1`), one after the other, so nothing else in the process maps, unmaps or trims.
@Suite(.serialized, .enabled(if: TrimTestChild.active)) struct KernelTrimTests {
    /// On the running kernel: a read-only private mapping of a file that was written before it was
    /// made read-only (as the dynamic linker does to RELRO data) keeps its written bytes; a clean one is unmapped
    /// and reads back the same from the file.
    @Test func writtenPagesSurviveAndCleanOnesAreDropped() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var template = Array("/tmp/gattbridge-trim-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = String(cString: template)
        defer { close(fd); unlink(path) }
        let contents = [UInt8](repeating: 0x5a, count: 4 * page)
        try #require(contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == contents.count)

        let relro = try #require(mmap(nil, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0))
        try #require(relro != MAP_FAILED)
        defer { munmap(relro, 4 * page) }
        relro.storeBytes(of: 0xa5, toByteOffset: page, as: UInt8.self)
        try #require(mprotect(relro, 4 * page, PROT_READ) == 0)

        let clean = try #require(mmap(nil, 4 * page, PROT_READ, MAP_PRIVATE, fd, 0))
        try #require(clean != MAP_FAILED)
        defer { munmap(clean, 4 * page) }
        var sum = 0
        for index in 0..<4 { sum += Int(clean.load(fromByteOffset: index * page, as: UInt8.self)) }
        #expect(sum == 4 * 0x5a)

        let start = UInt(bitPattern: clean)
        let before = try #require(StartupPageTrimTests.mapping(at: start))
        #expect(before.residentKiB == 4 * page / 1024)
        let outcome = try #require(StartupPageTrim.run())
        #expect(outcome.mappings > 0)
        #expect(outcome.failed == 0)
        #expect(StartupPageTrimTests.mapping(at: start)?.residentKiB == 0)       // no resident page left

        #expect(relro.load(fromByteOffset: page, as: UInt8.self) == 0xa5)
        #expect(relro.load(fromByteOffset: 0, as: UInt8.self) == 0x5a)
        #expect(clean.load(fromByteOffset: 2 * page, as: UInt8.self) == 0x5a)
    }

    /// On the running kernel: after a trim, a read in a trimmed mapping maps that one page, not the 64 KB window of
    /// cached pages around it. Where the kernel cannot turn fault-around off (before Linux 6.7, `userfaultfd`
    /// filtered), the plan says so and the window comes back whole.
    @Test func aTrimmedMappingFaultsBackOnePageAtATime() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = 32
        var template = Array("/tmp/gattbridge-fault-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { close(fd); unlink(path) }
        let contents = [UInt8](repeating: 0x3c, count: pages * page)
        try #require(contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == contents.count)

        let mapped = try #require(mmap(nil, pages * page, PROT_READ, MAP_PRIVATE, fd, 0))
        try #require(mapped != MAP_FAILED)
        defer { munmap(mapped, pages * page) }
        var sum = 0
        for index in 0..<pages { sum += Int(mapped.load(fromByteOffset: index * page, as: UInt8.self)) }
        #expect(sum == pages * 0x3c)      // every page cached and mapped

        var faultAroundOff = false
        let outcome = try #require(StartupPageTrim.run { faultAroundOff = $0.faultAroundOff })
        #expect(outcome.failed == 0)
        let start = UInt(bitPattern: mapped)
        #expect(StartupPageTrimTests.mapping(at: start)?.residentKiB == 0)
        #expect(mapped.load(fromByteOffset: 20 * page + 7, as: UInt8.self) == 0x3c)
        let resident = try #require(StartupPageTrimTests.mapping(at: start)).residentKiB
        if faultAroundOff {
            #expect(outcome.faultAroundKept == 0)
            #expect(resident == page / 1024)
        } else {
            #expect(resident > page / 1024)
        }
    }
}
