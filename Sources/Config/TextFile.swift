#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading small files (the config, a password file) with plain POSIX calls: no Foundation needed.
enum TextFile {
    /// The file's bytes, or the `strerror` text of the failure.
    static func read(_ path: String) -> Result<[UInt8], FileReadError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(FileReadError(errno: errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(FileReadError(errno: errno))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: buffer[0..<count])
        }
    }

    /// `path` as written when absolute, else relative to the directory of `file` (the config that names it),
    /// so a config and its secrets can move together.
    static func resolve(_ path: String, relativeTo file: String) -> String {
        guard !path.hasPrefix("/"), let slash = file.lastIndex(of: "/") else { return path }
        return String(file[...slash]) + path
    }
}

struct FileReadError: Error, Sendable, CustomStringConvertible {
    var errno: Int32

    var description: String { String(cString: strerror(errno)) }
}
