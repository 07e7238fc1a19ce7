import Glibc
import Testing
@testable import Config

/// The `web:` section (docs/web.md): on by default on loopback, any other address only with a password.
@Suite struct WebConfigTests {
    @Test func onByDefaultOnLoopback() throws {
        let parsed = try config("")
        #expect(parsed.web.enabled)
        #expect(parsed.web.listen == WebListen(host: "127.0.0.1", port: 8780))
        #expect(parsed.web.password == nil)
    }

    @Test func theNetworkNeedsAPasswordFile() throws {
        let found = issues("web:\n  listen: \"0.0.0.0:8780\"\n")
        #expect(found.count == 1 && found[0].hasPrefix("config.yaml:2:11: web listens on 0.0.0.0:8780"), "\(found)")
        #expect(issues("web:\n  listen: \"[::]:8780\"\n  enabled: false\n") == [])
        #expect(issues("web:\n  listen: \"[::1]:9000\"\n") == [])
    }

    @Test func thePasswordIsTheFirstLineWithoutSurroundingWhitespace() throws {
        let file = try TemporaryFile("  open sesame \t\nsecond line\n")
        defer { file.remove() }
        let parsed = try config("web:\n  listen: \"0.0.0.0:8780\"\n  password_file: \(file.path)\n")
        #expect(parsed.web.password?.value == "open sesame")
        #expect(parsed.web.passwordFile?.path == file.path)
        // Never printed.
        #expect(!"\(parsed.web)".contains("sesame"))
    }

    @Test func badValuesNameTheirPlace() throws {
        let empty = try TemporaryFile("\n  \n")
        defer { empty.remove() }
        #expect(issues("web:\n  password_file: \(empty.path)\n") == [
            "config.yaml:2:18: password_file \"\(empty.path)\" has no password on its first line",
        ])
        #expect(issues("web:\n  password_file: /nonexistent/pw\n").first?.hasPrefix(
            "config.yaml:2:18: cannot read password_file \"/nonexistent/pw\"") == true)
        #expect(issues("web:\n  listen: \"8780\"\n").first?.hasPrefix("config.yaml:2:11: listen in web must be HOST:PORT") == true)
        #expect(issues("web:\n  public_url: \"ftp://x\"\n").first?.hasPrefix("config.yaml:2:15: public_url in web must be") == true)
        let unknown = issues("web:\n  port: 1\n")
        #expect(unknown.count == 1 && unknown[0].hasPrefix("config.yaml:2:3: "), "\(unknown)")
        let parsed = try config("web:\n  public_url: \"https://pi.example/gb/\"\n")
        #expect(parsed.web.publicURL?.text == "https://pi.example/gb")
    }
}
