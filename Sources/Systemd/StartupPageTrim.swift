internal import CSystemd
import Glibc

/// Takes the code and read-only data that only the daemon's start-up (or a later burst of one-time work) touched out
/// of its resident set; the daemon's `PageTrimService` decides when.
///
/// Argument parsing, config and YAML parsing, validation, FoundationEssentials, TLS and library initialisation run
/// once, but every page of code and read-only data they touched stays mapped (file-backed, clean) for the life of the
/// process and counts in its RSS. Once the daemon has settled, `MADV_DONTNEED` over its read-only, file-backed,
/// private mappings (its own binary and the shared libraries) unmaps all of them; what the steady state runs faults
/// back in at its next use — a minor fault, the page is still in the page cache — and the rest stays out, left to the
/// kernel to reclaim when memory gets short. docs/dev/MEMORY.md has the measurements.
///
/// Not `MADV_PAGEOUT`: the kernel pages out file pages only for a process that owns or may write the file, and the
/// installed daemon (user `gattbridge`) can do neither to `/usr/bin/gattbridge`, so there it would release nothing;
/// and a page it did release would come back from storage, not from the page cache.
///
/// Safe because only mappings that are not writable and hold no anonymous page are touched: each of their pages reads
/// back identical from the file. The relocated read-only data (RELRO: written by the dynamic linker, then made
/// read-only, so its pages are anonymous copies), the heap, stacks and every writable mapping are left alone.
///
/// Fault-around off. On a read fault in a file mapping the kernel maps not one page but every cached page of the
/// aligned 64 KB window around it, so each function the steady state runs kept up to 15 neighbours it never runs
/// resident: with the code it runs spread over the standard library's one 1.6 MB section, that was most of what 50
/// broadcasters cost (docs/dev/MEMORY.md). The kernel skips fault-around in a mapping registered with a userfaultfd
/// for write-protect tracking, and from Linux 6.7 such a registration can be asynchronous, needing no thread to serve
/// it; nothing is ever write-protected, so it changes nothing else. The trim registers the mappings it drops, once
/// per mapping, with one descriptor kept for the life of the process. Where the kernel is older or `userfaultfd` is
/// filtered, the pages fault in 64 KB at a time as before.
public enum StartupPageTrim {
    /// A mapping that can be dropped: its address range and how much of it is resident.
    public struct Mapping: Equatable, Sendable {
        public let start: UInt
        public let end: UInt
        public let residentKiB: Int
        public let path: String
    }

    /// What a trim is about to do: the mappings it will advise and the RSS before (KiB). Told to the caller before
    /// any page is dropped, so that reporting it (formatting, logging) runs before the trim, not after: whatever code
    /// runs after the trim is faulted back and stays resident, and reading `/proc` and formatting a log line after it
    /// kept about 2 MB of code mapped that the steady state never runs (docs/dev/MEMORY.md).
    public struct Plan: Sendable {
        public let mappings: [Mapping]
        public let rssBeforeKiB: Int
        /// Whether the trimmed mappings will fault back one page at a time (see above).
        public let faultAroundOff: Bool
        /// The candidates' resident pages: what `MADV_DONTNEED` takes out of the resident set.
        public var releasableKiB: Int { mappings.reduce(0) { $0 + $1.residentKiB } }
        public var rssAfterKiB: Int { max(0, rssBeforeKiB - releasableKiB) }
    }

    /// What one trim did: the mappings advised, how many calls failed, and how many mappings kept fault-around
    /// because their registration was refused.
    public struct Outcome: Sendable {
        public let mappings: Int
        public let failed: Int
        public let faultAroundKept: Int
    }

    /// `GATTBRIDGE_NO_TRIM=1` turns the trim off (to compare, or if a kernel ever misbehaves with it).
    public static var isDisabled: Bool {
        getenv("GATTBRIDGE_NO_TRIM").map { String(cString: $0) == "1" } ?? false
    }

    /// `GATTBRIDGE_FAULT_AROUND=1` keeps the kernel's fault-around (to measure what turning it off saves).
    static var keepsFaultAround: Bool {
        getenv("GATTBRIDGE_FAULT_AROUND").map { String(cString: $0) == "1" } ?? false
    }

    /// The userfaultfd the trimmed mappings are registered with; -1 where there is none. Opened at the first trim and
    /// never closed: closing it would unregister every mapping.
    private static let faultAroundSwitch: Int32 = keepsFaultAround ? -1 : gattbridge_fault_around_switch()

    /// The mappings of `smaps` (the text of `/proc/PID/smaps`) that may be dropped: private, not writable, backed by
    /// a file (an inode, a path; not a device), with no anonymous page. Those with no resident page are listed too:
    /// dropping them is a no-op, but they still need fault-around off before their first fault.
    public static func candidates(smaps: String) -> [Mapping] {
        var result: [Mapping] = []
        var current: (start: UInt, end: UInt, path: String)?
        var rss = 0
        var anonymous = 0
        func close() {
            if let mapping = current, anonymous == 0 {
                result.append(Mapping(start: mapping.start, end: mapping.end, residentKiB: rss, path: mapping.path))
            }
            current = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                guard current != nil, fields.count >= 2, let value = Int(fields[1]) else { continue }
                if first == "Rss:" { rss = value } else if first == "Anonymous:" { anonymous = value }
                continue
            }
            close()
            // start-end perms offset dev inode [path]
            guard fields.count >= 6 else { continue }
            let range = first.split(separator: "-")
            let perms = Array(fields[1].utf8)
            let path = fields[5].drop(while: { $0 == " " })
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                  perms.count == 4, perms[1] != UInt8(ascii: "w"), perms[3] == UInt8(ascii: "p"),
                  fields[4] != "0", path.hasPrefix("/"), !path.hasPrefix("/dev/") else { continue }
            current = (start, end, String(path))
            rss = 0
            anonymous = 0
        }
        close()
        return result
    }

    /// Reads `/proc/self/smaps`, tells `announce` what it will drop, and drops the candidates; nil when the file
    /// cannot be read (no /proc). Nothing after the `madvise` calls reads, formats or frees a String (see `Plan`):
    /// `prepare` returns only the address ranges, and everything else it made is gone when it returns.
    /// Never inlined: scripts/release/symbol_order.py splits its profile where this function begins.
    @inline(never)
    public static func run(announce: (Plan) -> Void = { _ in }) -> Outcome? {
        guard let ranges = prepare(announce: announce) else { return nil }
        defer { ranges.deallocate() }
        var advised = 0
        var failed = 0
        var kept = 0
        let faultAround = faultAroundSwitch
        for range in ranges where faultAround >= 0 {
            // Before the pages go: their first fault back is then already one page. A mapping registered by an
            // earlier trim is accepted again; EINVAL or EBUSY (a special mapping, another userfaultfd) keeps it as is.
            if gattbridge_fault_around_off(faultAround, range.start, range.end - range.start) != 0 { kept += 1 }
        }
        for range in ranges {
            // EINVAL (a locked or special mapping) or EPERM (a seccomp filter without madvise): leave it be.
            if madvise(UnsafeMutableRawPointer(bitPattern: range.start), Int(range.end - range.start), MADV_DONTNEED) == 0 {
                advised += 1
            } else {
                failed += 1
            }
        }
        return Outcome(mappings: advised, failed: failed, faultAroundKept: kept)
    }

    @inline(never)
    private static func prepare(announce: (Plan) -> Void) -> UnsafeMutableBufferPointer<(start: UInt, end: UInt)>? {
        guard let smaps = read("/proc/self/smaps") else { return nil }
        let plan = Plan(mappings: candidates(smaps: smaps), rssBeforeKiB: residentKiB(),
                        faultAroundOff: faultAroundSwitch >= 0)
        announce(plan)
        let ranges = UnsafeMutableBufferPointer<(start: UInt, end: UInt)>.allocate(capacity: plan.mappings.count)
        for (index, mapping) in plan.mappings.enumerated() { ranges[index] = (mapping.start, mapping.end) }
        return ranges
    }

    /// This process's RSS in KiB, from `/proc/self/statm` (its second field, in pages); 0 when unreadable.
    public static func residentKiB() -> Int {
        guard let statm = read("/proc/self/statm") else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }

    /// A /proc file's text. Its size is not known beforehand (`stat` says 0), so read until the end.
    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
