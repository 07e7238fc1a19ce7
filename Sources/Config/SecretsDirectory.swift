#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `secrets_dir`: where a device added over the bridge API may take its `passkey_file` from. Whoever may publish a
/// `device/add` must not be able to make the daemon read (and hand to a peripheral of their choice) any file the
/// daemon can read: only files the operator put under this directory qualify.
public enum SecretsDirectory {
    /// The real path of `path` (relative paths are taken relative to `directory`) when it is a file under
    /// `directory` after every symlink and `..` is resolved; nil otherwise (outside, missing, unreadable
    /// directory: the caller's error says the same in every case, so it tells nothing about other paths).
    public static func locate(_ path: String, in directory: String) -> String? {
        guard !path.utf8.contains(0), let root = realPath(directory) else { return nil }
        let candidate = path.hasPrefix("/") ? path : (directory.hasSuffix("/") ? directory : directory + "/") + path
        guard let real = realPath(candidate) else { return nil }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        guard real.hasPrefix(prefix), real.count > prefix.count else { return nil }
        return real
    }

    /// The canonical path (symlinks and `..` resolved), or nil when it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
