#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading small files (the config, a password file) with plain POSIX calls: no Foundation needed.
///
/// Only regular files, and only up to a size cap: a path pointing at `/dev/zero` would otherwise grow the buffer
/// until the allocation aborts the process, and a FIFO would block the reader (on SIGHUP, the whole daemon) until
/// someone writes to it. Both are config errors instead.
public enum TextFile {
    /// The config file (and its drop-ins): real configs are a few KiB.
    static let configLimit = 1 << 20
    /// A password or passkey file: a secret is one short line.
    public static let secretLimit = 4096

    /// The file's bytes, at most `limit` of them.
    ///
    /// `O_NONBLOCK` makes `open` itself return at once on a FIFO with no writer (without it, `open` blocks); the
    /// `fstat` on the opened descriptor, not on the path, then refuses it, so nothing can swap the file in between.
    public static func read(_ path: String, limit: Int) -> Result<[UInt8], FileReadError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return .failure(.system(errno)) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return .failure(.system(errno)) }
        guard status.st_mode & S_IFMT == S_IFREG else { return .failure(.notRegular(FileKind(mode: status.st_mode))) }
        guard status.st_size <= limit else { return .failure(.tooLarge(limit: limit)) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        // One byte beyond the cap, so a file that grew after the fstat is still caught.
        var buffer = [UInt8](repeating: 0, count: min(65536, limit + 1))
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - bytes.count)) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.system(errno))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > limit { return .failure(.tooLarge(limit: limit)) }
        }
    }

    /// `path` as written when absolute, else relative to the directory of `file` (the config that names it),
    /// so a config and its secrets can move together.
    static func resolve(_ path: String, relativeTo file: String) -> String {
        guard !path.hasPrefix("/"), let slash = file.lastIndex(of: "/") else { return path }
        return String(file[...slash]) + path
    }

    /// The permission bits of `path` (following symlinks), or nil when it cannot be stat'ed.
    static func permissions(_ path: String) -> UInt32? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return UInt32(status.st_mode) & 0o7777
    }
}

/// What a path that is not a regular file is, for the message.
public enum FileKind: Sendable, Equatable {
    case directory, fifo, socket, characterDevice, blockDevice, other

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFDIR: self = .directory
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .other
        }
    }

    var description: String {
        switch self {
        case .directory: "a directory"
        case .fifo: "a FIFO"
        case .socket: "a socket"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .other: "a special file"
        }
    }
}

public enum FileReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errno` of the failed call.
    case system(Int32)
    case notRegular(FileKind)
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .system(let code): String(cString: strerror(code))
        case .notRegular(let kind): "not a regular file (\(kind.description))"
        case .tooLarge(let limit): "larger than \(Self.size(limit)), the most accepted"
        }
    }

    private static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
