@testable import Config

/// The issue lines (`config.yaml:L:C: message`) for `yaml`, or [] when it is valid.
func issues(_ yaml: String, file: String = "config.yaml") -> [String] {
    do throws(ConfigErrors) {
        _ = try ConfigLoader.parse(yaml, file: file)
        return []
    } catch {
        return error.issues.map(\.description)
    }
}

/// Parses a config that must be valid.
func config(_ yaml: String, file: String = "config.yaml") throws -> BridgeConfig {
    try ConfigLoader.parse(yaml, file: file)
}

/// A minimal valid device list, for tests about other sections.
let oneDevice = """
devices:
  - name: strap
    address: "C0:FF:EE:00:00:01"
    channels:
      - name: hr
        characteristic: "2a37"
        codec: heart_rate_measurement
"""

/// A device whose single channel has `extra` keys, each line indented by 8 spaces. The channel mapping
/// starts at line 5, column 9; the first extra key is at line 8, column 9.
func channelYAML(codec: String = "hex", _ extra: String...) -> String {
    var lines = [
        "devices:",
        "  - name: dev",
        "    address: \"C0:FF:EE:00:00:09\"",
        "    channels:",
        "      - name: ch",
        "        characteristic: \"2a19\"",
        "        codec: \(codec)",
    ]
    lines += extra.map { "        " + $0 }
    return lines.joined(separator: "\n") + "\n"
}

/// A writable temporary file holding `contents`, removed by `remove()`.
struct TemporaryFile {
    let path: String

    init(_ contents: String, name: String = "secret") throws {
        let base = "/tmp/gattbridge-config-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
        path = base
        guard let handle = fopen(path, "w") else { throw TemporaryFileError() }
        fputs(contents, handle)
        fclose(handle)
    }

    func remove() {
        unlink(path)
    }
}

struct TemporaryFileError: Error {}

#if canImport(Glibc)
import Glibc
#endif
