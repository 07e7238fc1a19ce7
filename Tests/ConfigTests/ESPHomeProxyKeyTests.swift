import Glibc
import Testing
@testable import Config

/// The proxy's key (docs/configuration.md#esphome_proxy): ESPHome's base64 form, made once in the state directory
/// with mode 0600 and reused after, and never shown in an error.
@Suite struct ESPHomeProxyKeyTests {
    @Test func base64OfExactly32Bytes() {
        let text = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        #expect(ESPHomeProxyKey(base64: text)?.bytes == Array(0..<32))
        #expect(ESPHomeProxyKey(base64: " \(text)\n")?.base64 == text)
        #expect(ESPHomeProxyKey(base64: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==") == nil)    // 31 bytes
        #expect(ESPHomeProxyKey(base64: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==") == nil)    // 34 bytes
        #expect(ESPHomeProxyKey(base64: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8-") == nil)    // URL alphabet
        #expect(ESPHomeProxyKey(base64: "") == nil)
        #expect("\(ESPHomeProxyKey(base64: text)!)" == "<redacted>")
    }

    @Test func randomKeysDiffer() {
        let a = ESPHomeProxyKey.random(), b = ESPHomeProxyKey.random()
        #expect(a.bytes.count == 32 && a != b)
        #expect(ESPHomeProxyKey(base64: a.base64) == a)
    }

    @Test func theStateKeyIsCreatedOnceWithMode0600() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = directory.path + "/state"    // not there yet: made like the daemon's state directory
        var settings = ESPHomeProxySettings()
        settings.enabled = true
        let first = try #require(try ESPHomeProxyKey.resolve(settings, stateDir: state))
        let path = state + "/esphome-proxy.key"
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(try ESPHomeProxyKey.read(file: path) == first)
        // The second start (or `gattbridge esphome-key`) finds the same key.
        #expect(try ESPHomeProxyKey.resolve(settings, stateDir: state) == first)
        // No temporary file is left behind.
        #expect(access(state + "/.esphome-proxy.key.\(getpid()).tmp", F_OK) != 0)
    }

    @Test func theConfiguredKeyOrNoneWinsOverTheStateKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var settings = ESPHomeProxySettings()
        settings.encryptionKey = ESPHomeProxyKey(bytes: Array(repeating: 7, count: 32))
        #expect(try ESPHomeProxyKey.resolve(settings, stateDir: directory.path) == settings.encryptionKey)
        settings.encryption = false
        #expect(try ESPHomeProxyKey.resolve(settings, stateDir: directory.path) == nil)
        // Neither wrote the state key.
        #expect(access(directory.path + "/esphome-proxy.key", F_OK) != 0)
    }

    @Test func aDamagedStateKeyIsAnErrorWithoutItsContentAndIsKept() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("esphome-proxy.key", "hunter2-not-a-key\n")
        let path = directory.path + "/esphome-proxy.key"
        #expect {
            try ESPHomeProxyKey.loadOrCreate(stateDir: directory.path)
        } throws: { error in
            let text = "\(error)"
            return text.contains(path) && !text.contains("hunter2")
        }
        #expect(try TextFile.read(path, limit: 100).get() == Array("hunter2-not-a-key\n".utf8))
    }
}
