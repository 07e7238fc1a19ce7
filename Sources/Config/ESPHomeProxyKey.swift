#if canImport(Glibc)
import Glibc
#endif
import Codecs

/// The ESPHome proxy's Noise pre-shared key: 32 bytes, written as base64 like ESPHome's `api: encryption: key:`, the
/// text Home Assistant's setup dialog asks for (docs/configuration.md#esphome_proxy).
///
/// Printing it shows a placeholder, like `Secret`: only `bytes` and `base64` give the key.
public struct ESPHomeProxyKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    public static let byteCount = 32
    /// Where the daemon keeps the key it made, under `state_dir`.
    public static let stateFileName = "esphome-proxy.key"

    public let bytes: [UInt8]

    /// nil unless exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Base64 of exactly 32 bytes, surrounding whitespace ignored; nil otherwise.
    public init?(base64 text: String) {
        guard let bytes = Base64.decodeIfValid(text) else { return nil }
        self.init(bytes: bytes)
    }

    public var base64: String { Base64.encode(bytes) }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// A fresh key from the kernel's random source: Swift's `SystemRandomNumberGenerator` is `getrandom(2)` on Linux
    /// (Glibc's module map does not export `getrandom` itself).
    public static func random() -> ESPHomeProxyKey {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for _ in 0..<(byteCount / 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return ESPHomeProxyKey(bytes: bytes)!
    }
}

/// Why the proxy's key cannot be had. Names the file, never its content.
public struct ESPHomeProxyKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

extension ESPHomeProxyKey {
    /// The key the proxy uses with `settings`: nil with `encryption: false`; the key read from `encryption_key_file`
    /// when the config loaded; else `<stateDir>/esphome-proxy.key`, created (32 random bytes, mode 0600) when it does
    /// not exist yet, so the first start with the proxy enabled needs no key from the user.
    public static func resolve(_ settings: ESPHomeProxySettings, stateDir: String) throws(ESPHomeProxyKeyError)
        -> ESPHomeProxyKey? {
        guard settings.encryption else { return nil }
        if let key = settings.encryptionKey { return key }
        return try loadOrCreate(stateDir: stateDir)
    }

    /// Reads a key file: base64 of 32 bytes, surrounding whitespace ignored.
    public static func read(file path: String, key: String = "encryption_key_file") throws(ESPHomeProxyKeyError)
        -> ESPHomeProxyKey {
        switch TextFile.read(path, limit: TextFile.secretLimit) {
        case .failure(let error):
            throw ESPHomeProxyKeyError("cannot read \(key) \"\(path)\": \(error)")
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self), let parsed = ESPHomeProxyKey(base64: text) else {
                throw ESPHomeProxyKeyError("\(key) \"\(path)\" must hold a key of 32 bytes in base64 (44 characters, "
                    + "as `gattbridge esphome-key --new` prints)")
            }
            return parsed
        }
    }

    /// `<stateDir>/esphome-proxy.key`, made if missing. A file that exists but is not a key is an error, never
    /// replaced: Home Assistant holds that key.
    public static func loadOrCreate(stateDir: String) throws(ESPHomeProxyKeyError) -> ESPHomeProxyKey {
        let path = (stateDir.hasSuffix("/") ? stateDir : stateDir + "/") + stateFileName
        if access(path, F_OK) == 0 { return try read(file: path, key: "the proxy's key file") }
        let key = random()
        // Whoever lost a race with another process (the daemon and `esphome-key` at once) takes the winner's key.
        if try KeyFileWriter.create(path, text: key.base64 + "\n", directory: stateDir) {
            return key
        }
        return try read(file: path, key: "the proxy's key file")
    }
}

/// Creating the key file all at once: a temporary file, mode 0600 from the start, linked into place only when complete,
/// so no reader ever sees half a key and an existing key is never overwritten.
enum KeyFileWriter {
    /// True when `path` was created; false when it already existed (someone else made it meanwhile).
    static func create(_ path: String, text: String, directory: String) throws(ESPHomeProxyKeyError) -> Bool {
        guard mkdir(directory, 0o750) == 0 || errno == EEXIST else { throw failure("cannot create \(directory)") }
        let temporary = directory + "/.\(ESPHomeProxyKey.stateFileName).\(getpid()).tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        defer { unlink(temporary) }
        fchmod(fd, 0o600)
        // root running `gattbridge esphome-key` makes the file for the daemon's user: the state directory's owner.
        var owner = stat()
        if geteuid() == 0, stat(directory, &owner) == 0 { fchown(fd, owner.st_uid, owner.st_gid) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let error = failure("cannot write \(temporary)")
                close(fd)
                throw error
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            let error = failure("cannot sync \(temporary)")
            close(fd)
            throw error
        }
        close(fd)
        // link(2), unlike rename(2), fails on an existing target instead of replacing it.
        if link(temporary, path) == 0 {
            DropInStore.syncDirectory(directory)
            return true
        }
        if errno == EEXIST { return false }
        // File systems without hard links: rename, still atomic for readers.
        guard errno == EPERM || errno == EOPNOTSUPP, rename(temporary, path) == 0 else {
            throw failure("cannot create \(path)")
        }
        DropInStore.syncDirectory(directory)
        return true
    }

    private static func failure(_ what: String) -> ESPHomeProxyKeyError {
        ESPHomeProxyKeyError("\(what): \(String(cString: strerror(errno)))")
    }
}
