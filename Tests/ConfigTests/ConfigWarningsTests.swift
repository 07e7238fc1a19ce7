import Testing
@testable import Config

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ConfigWarningsTests {
    private func warnings(_ yaml: String) throws -> [String] {
        try config(yaml).warnings(file: "config.yaml").map(\.description)
    }

    @Test func aSafeConfigHasNoWarnings() throws {
        #expect(try warnings(oneDevice) == [])
        #expect(try warnings("mqtt:\n  username: u\n  password: p\n") == [])   // localhost
        #expect(try warnings("mqtt:\n  host: broker.lan\n  username: u\n  password: p\n  tls: true\n") == [])
        #expect(try warnings("mqtt:\n  host: broker.lan\n") == [])   // no credentials to expose
    }

    /// `insecure` used to be described as skipping certificate checks and passed silently; it only skips the host
    /// name check (mosquitto_tls_insecure_set), and now says so.
    @Test func tlsInsecureIsAWarning() throws {
        #expect(try warnings("mqtt:\n  tls: { insecure: true }\n") == [
            "config.yaml: warning: mqtt.tls.insecure is set: the broker's host name is not checked against its "
                + "certificate (the certificate itself is still verified), so any server with a certificate from a "
                + "trusted CA can pose as the broker; use it for testing only",
        ])
        #expect(try warnings("mqtt:\n  tls: { insecure: false }\n") == [])
    }

    @Test func credentialsWithoutTLSToANonLoopbackBroker() throws {
        let secret = "Sup3r-S3cret"
        let found = try warnings("mqtt:\n  host: broker.example\n  username: bridge\n  password: \(secret)\n")
        #expect(found == [
            "config.yaml: warning: the MQTT username and password go to broker.example:1883 unencrypted (no mqtt.tls): "
                + "anyone on the network path can read them",
        ])
        #expect(!found.joined().contains(secret))
        #expect(try warnings("mqtt:\n  host: 10.0.0.2\n  username: bridge\n") == [
            "config.yaml: warning: the MQTT username goes to 10.0.0.2:1883 unencrypted (no mqtt.tls): anyone on the "
                + "network path can read it",
        ])
    }

    @Test(arguments: ["localhost", "LOCALHOST", "localhost.", "mqtt.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
    func loopbackHostsAreExempt(host: String) {
        #expect(BridgeConfig.isLoopback(host))
    }

    @Test(arguments: ["broker", "10.0.0.1", "128.0.0.1", "127.0.0.256", "127.0.0", "localhost.example", "::2", "fe80::1"])
    func otherHostsAreNot(host: String) {
        #expect(!BridgeConfig.isLoopback(host))
    }

    @Test func passwordFileReadableByOthers() throws {
        let secret = "Sup3r-S3cret-In-A-File"
        let file = try TemporaryFile(secret + "\n")
        defer { file.remove() }
        let yaml = "mqtt:\n  username: u\n  password_file: \(file.path)\n"
        chmod(file.path, 0o644)
        let found = try warnings(yaml)
        #expect(found == [
            "config.yaml: warning: password_file \"\(file.path)\" is accessible to group or others (mode 0644); make "
                + "it readable by its owner only (chmod 600)",
        ])
        #expect(!found.joined().contains(secret))
        chmod(file.path, 0o640)
        #expect(try warnings(yaml).count == 1)
        for mode: mode_t in [0o600, 0o400] {
            chmod(file.path, mode)
            #expect(try warnings(yaml) == [])
        }
    }
}
