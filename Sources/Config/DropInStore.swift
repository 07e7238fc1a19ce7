import Codecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Saves and deletes the bridge API's drop-ins (`<state_dir>/devices.d/<name>.yaml`). A save is atomic: the text
/// goes to a temporary file in the same directory, is fsynced, and renamed over the target, so a crash or power
/// loss leaves the old file or the new one, never half of one.
public enum DropInStore {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The drop-in's file name for a device: the name with anything but letters, digits, `-` and `_` replaced,
    /// so no name can leave the directory or hide as a dot file.
    public static func fileName(for deviceName: String) -> String {
        var name = ""
        for scalar in deviceName.unicodeScalars {
            let keep = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                                          || scalar == "-" || scalar == "_")
            name.unicodeScalars.append(keep ? scalar : "_")
        }
        return name + ".yaml"
    }

    public static func path(for deviceName: String, stateDir: String) -> String {
        ConfigLoader.dropInDirectory(stateDir: stateDir) + "/" + fileName(for: deviceName)
    }

    /// The drop-in text of a device object: indented JSON, which the YAML loader reads back as it is.
    public static func text(of device: JSONValue) -> String {
        var out = ""
        render(device, indent: "", to: &out)
        return out + "\n"
    }

    private static func render(_ value: JSONValue, indent: String, to out: inout String) {
        let inner = indent + "  "
        switch value {
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (index, (key, member)) in members.enumerated() {
                out += inner + quoted(key) + ": "
                render(member, indent: inner, to: &out)
                out += index == members.count - 1 ? "\n" : ",\n"
            }
            out += indent + "}"
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += inner
                render(item, indent: inner, to: &out)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += indent + "]"
        case .string(let text):
            out += quoted(text)
        default:
            out += value.serialized
        }
    }

    /// A JSON string that YAML reads back too: YAML allows only printable characters in a document, so C0 and C1
    /// controls, DEL, line and paragraph separators, U+FEFF and U+FFFE/U+FFFF are written as `\u` escapes, which
    /// both languages read.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let value = scalar.value
                let printable = (0x20...0x7E).contains(value) || (0xA0...0xD7FF).contains(value)
                    || (0xE000...0xFFFD).contains(value) || value >= 0x10000
                // libyaml breaks lines at U+2028/U+2029 (YAML 1.1) even in quotes, and may take U+FEFF for a BOM.
                if printable && value != 0x2028 && value != 0x2029 && value != 0xFEFF {
                    out.unicodeScalars.append(scalar)
                } else {
                    let hex = String(value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            }
        }
        return out + "\""
    }

    /// Writes `text` to `path` atomically with mode 0640, creating `state_dir` and `devices.d` if missing.
    /// Refuses to replace an existing file unless `replace` is set. `durable: false` skips the fsyncs, for a file
    /// rewritten every few seconds (the replay ledger): the rename still leaves the old file or the new one.
    public static func save(_ text: String, to path: String, replace: Bool = false,
                            durable: Bool = true) throws(Failure) {
        guard let slash = path.lastIndex(of: "/") else { throw Failure(description: "bad drop-in path \(path)") }
        let directory = String(path[..<slash])
        if let parentSlash = directory.lastIndex(of: "/"), parentSlash != directory.startIndex {
            try makeDirectory(String(directory[..<parentSlash]))
        }
        try makeDirectory(directory)
        if !replace, access(path, F_OK) == 0 {
            throw Failure(description: "\(path) already exists")
        }
        let temporary = directory + "/.\(fileNamePart(path)).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o640)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let error = failure("cannot write \(temporary)")
                close(fd)
                throw error
            }
            written += count
        }
        // The umask may have narrowed the mode given to open().
        fchmod(fd, 0o640)
        guard !durable || fsync(fd) == 0 else {
            let error = failure("cannot sync \(temporary)")
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw failure("cannot rename \(temporary) to \(path)") }
        ok = true
        if durable { syncDirectory(directory) }
    }

    /// Deletes a drop-in; one that is already gone is not an error.
    public static func delete(_ path: String) throws(Failure) {
        guard unlink(path) == 0 || errno == ENOENT else { throw failure("cannot delete \(path)") }
        if let slash = path.lastIndex(of: "/") { syncDirectory(String(path[..<slash])) }
    }

    private static func makeDirectory(_ path: String) throws(Failure) {
        guard mkdir(path, 0o750) == 0 || errno == EEXIST else { throw failure("cannot create \(path)") }
    }

    /// The rename itself is durable only once the directory is synced (the proxy's key file is made the same way).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func fileNamePart(_ path: String) -> Substring {
        path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? Substring(path)
    }

    private static func failure(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(errno)))")
    }
}
