import Glibc

/// Unbuffered stdout/stderr: each call is whole lines in one `write()`, so a consumer of a pipe (`listen | …`)
/// sees every value the moment it arrives and lines from different tasks never interleave.
enum Terminal {
    /// False once stdout is gone (EPIPE): `listen` then stops instead of writing into the void.
    @discardableResult
    static func out(_ text: String) -> Bool { write(fd: 1, text) }

    static func err(_ text: String) { write(fd: 2, text) }

    /// One error line: "gattbridge: message".
    static func error(_ message: String) { err("gattbridge: \(message)\n") }

    static var stdoutIsTerminal: Bool { isatty(1) == 1 }

    @discardableResult
    private static func write(fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
