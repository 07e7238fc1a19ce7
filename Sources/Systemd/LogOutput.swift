import Glibc

extension SystemdLogHandler {
    /// Where lines go: stderr connected to journald (priority prefixes, no timestamps: journald adds its own) or
    /// anything else (a terminal, a file, a pipe), which gets human-readable timestamped lines.
    public enum Output: Sendable, Equatable {
        case journal
        case console
    }

    /// `.journal` only when `JOURNAL_STREAM` names the very file stderr is: systemd sets it for the service's
    /// stdout/stderr stream, and a child whose stderr was redirected must not keep the prefixes.
    public static func detectOutput() -> Output {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return .console }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return .console }
        return journalStream(value, matchesDevice: UInt64(info.st_dev), inode: UInt64(info.st_ino)) ? .journal : .console
    }

    /// Parses `JOURNAL_STREAM` ("<device>:<inode>", decimal) and compares it with a file's identity.
    static func journalStream(_ value: String, matchesDevice device: UInt64, inode: UInt64) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let streamDevice = UInt64(parts[0]), let streamInode = UInt64(parts[1]) else { return false }
        return streamDevice == device && streamInode == inode
    }
}
