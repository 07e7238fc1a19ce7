import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

/// The config and secret files are read only when regular and small, and libyaml never sees a document nested
/// beyond the depth limit: each of these used to abort the process, hang it, or take seconds.
@Suite(.timeLimit(.minutes(1))) struct FileLimitsTests {
    private func loadIssues(_ path: String) -> [String] {
        do throws(ConfigErrors) {
            _ = try ConfigLoader.load(path: path)
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    /// A FIFO nobody writes to: without O_NONBLOCK, `open` itself would block for ever.
    private func fifo() throws -> String {
        let path = "/tmp/gattbridge-config-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-fifo"
        guard mkfifo(path, 0o600) == 0 else { throw TemporaryFileError() }
        return path
    }

    @Test func configMustBeARegularFile() throws {
        #expect(loadIssues("/dev/zero") == ["/dev/zero: cannot read the config: not a regular file (a character device)"])
        #expect(loadIssues("/tmp") == ["/tmp: cannot read the config: not a regular file (a directory)"])
        let path = try fifo()
        defer { unlink(path) }
        #expect(loadIssues(path) == ["\(path): cannot read the config: not a regular file (a FIFO)"])
    }

    @Test func configOfAtMostOneMebibyte() throws {
        // Comment lines: valid YAML of any length, so only the size decides.
        let line = "# " + String(repeating: "x", count: 1021) + "\n"   // 1,024 bytes
        let fits = try TemporaryFile(String(repeating: line, count: 1024), name: "fits.yaml")
        defer { fits.remove() }
        #expect(loadIssues(fits.path) == [])
        let over = try TemporaryFile(String(repeating: line, count: 1024) + "\n", name: "over.yaml")
        defer { over.remove() }
        #expect(loadIssues(over.path) == ["\(over.path): cannot read the config: larger than 1 MiB, the most accepted"])
    }

    @Test func passwordFileMustBeASmallRegularFile() throws {
        let yaml = { (path: String) in "mqtt:\n  username: u\n  password_file: \(path)\n" }
        #expect(issues(yaml("/dev/zero")) == [
            "config.yaml:3:18: cannot read password_file \"/dev/zero\": not a regular file (a character device)",
        ])
        let path = try fifo()
        defer { unlink(path) }
        #expect(issues(yaml(path)) == ["config.yaml:3:18: cannot read password_file \"\(path)\": not a regular file (a FIFO)"])
        let big = try TemporaryFile(String(repeating: "p", count: 4097))
        defer { big.remove() }
        #expect(issues(yaml(big.path)) == [
            "config.yaml:3:18: cannot read password_file \"\(big.path)\": larger than 4 KiB, the most accepted",
        ])
        let largest = try TemporaryFile(String(repeating: "p", count: 4096))
        defer { largest.remove() }
        #expect(try config(yaml(largest.path)).mqtt.password?.value == String(repeating: "p", count: 4096))
    }

    /// 40,000 unclosed `[` took libyaml 8.8 s before the depth check of the tree could run.
    @Test func deepFlowNestingIsRefusedBeforeLibyamlLoadsIt() {
        #expect(issues(String(repeating: "[", count: 40_000))
            == ["config.yaml:1:65: the document is nested more than 64 levels deep"])
        #expect(issues(String(repeating: "{a: ", count: 40_000))
            == ["config.yaml:1:254: the document is nested more than 64 levels deep"])
    }

    @Test func depthLimitIsSixtyFourLevels() {
        // 64 nested sequences: the innermost is inside 63 collections, the most `convert` accepts too.
        let deepest = "devices: " + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "\n"
        #expect(!issues(deepest).contains { $0.contains("nested") })
        let tooDeep = "devices: " + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "\n"
        #expect(issues(tooDeep) == ["config.yaml:1:73: the document is nested more than 64 levels deep"])
    }

    @Test func deepBlockNestingIsRefused() {
        let compact = String(repeating: "- ", count: 100_000) + "x\n"
        #expect(issues(compact) == ["config.yaml:1:129: the document is nested more than 64 levels deep"])
        var indented = ""
        for level in 0..<70 { indented += String(repeating: " ", count: level) + "k\(level):\n" }
        #expect(issues(indented) == ["config.yaml:64:64: the document is nested more than 64 levels deep"])
    }

    /// Brackets in quoted scalars and comments are text: libyaml's own tokens decide what nests.
    @Test func bracketsInsideStringsAndCommentsAreNotNesting() throws {
        let brackets = String(repeating: "[", count: 200)
        let yaml = "# \(brackets)\nmqtt:\n  client_id: \"\(brackets)\"\n  username: '\(brackets)'\n"
        let parsed = try config(yaml)
        #expect(parsed.mqtt.clientID == brackets)
        #expect(parsed.mqtt.username == brackets)
    }
}
