import DBus
import Glibc
import Testing
@testable import Avahi

/// The announcer against a real avahi-daemon on a private system bus (`AvahiBench`): what Home Assistant's zeroconf
/// browse would see, checked with avahi-browse.
@Suite(.serialized, .enabled(if: AvahiBench.unavailableReason == nil, Comment(rawValue: AvahiBench.unavailableReason ?? "")))
struct AvahiAnnouncerTests {
    static let type = "_esphomelib._tcp"

    static func service(_ name: String = "gb-proxy") -> AvahiService {
        AvahiService(name: name, type: type, port: 6053, txt: [
            (key: "friendly_name", value: "Garden Pi"), (key: "version", value: "2025.5.0"),
            (key: "mac", value: "c0ffee000001"), (key: "platform", value: "host"), (key: "network", value: "ethernet"),
            (key: "api_encryption", value: "Noise_NNpsk0_25519_ChaChaPoly_SHA256"),
        ])
    }

    @Test func announcesNamePortAndTXTAndWithdrawsOnStop() async throws {
        let bench = try AvahiBench()
        defer { bench.stop() }
        try bench.startAvahi()
        let connection = try await DBusConnection.connect(address: bench.address)
        defer { connection.close() }
        try await waitUntil(10, "avahi-daemon on the bus") { try await connection.getNameOwner("org.freedesktop.Avahi") != nil }

        let announcer = AvahiAnnouncer(connection: connection, service: Self.service())
        await announcer.start()
        let event = try await nextEvent(announcer.events, 10, "announced") { if case .announced = $0 { true } else { false } }
        #expect(event == .announced(name: "gb-proxy"))

        var found: [(name: String, port: Int, txt: [String])] = []
        try await waitUntil(10, "avahi-browse lists gb-proxy") {
            found = try bench.browse(Self.type).filter { $0.name == "gb-proxy" }
            return !found.isEmpty
        }
        #expect(found[0].port == 6053)
        #expect(Set(found[0].txt) == Set(Self.service().txt.map { "\($0.key)=\($0.value)" }))

        await announcer.stop()
        try await waitUntil(10, "gb-proxy withdrawn") { try bench.browse(Self.type).allSatisfy { $0.name != "gb-proxy" } }
    }

    @Test func withoutAvahiOneWarningThenAnnouncedWhenItAppearsAndAfterItRestarts() async throws {
        let bench = try AvahiBench()
        defer { bench.stop() }
        let connection = try await DBusConnection.connect(address: bench.address)
        defer { connection.close() }
        let announcer = AvahiAnnouncer(connection: connection, service: Self.service("gb-late"))
        await announcer.start()
        let warning = try await nextEvent(announcer.events, 10, "the warning") { _ in true }
        guard case .unavailable(let text) = warning else {
            Issue.record("expected .unavailable first, got \(warning)")
            return
        }
        #expect(text.contains("avahi-daemon is not on the system bus") && text.contains("6053"))

        try bench.startAvahi()
        let first = try await nextEvent(announcer.events, 15, "announced once avahi appears") { _ in true }
        #expect(first == .announced(name: "gb-late"))

        bench.stopAvahi()
        let gone = try await nextEvent(announcer.events, 10, "withdrawn when avahi leaves") { _ in true }
        #expect(gone == .withdrawn)
        try bench.startAvahi()
        let again = try await nextEvent(announcer.events, 15, "announced after the restart") { _ in true }
        #expect(again == .announced(name: "gb-late"))
        try await waitUntil(10, "avahi-browse lists gb-late") { try bench.browse(Self.type).contains { $0.name == "gb-late" } }
        await announcer.stop()
    }

    @Test func aTakenNameBecomesNameDash2() async throws {
        let bench = try AvahiBench()
        defer { bench.stop() }
        try bench.startAvahi()
        let connection = try await DBusConnection.connect(address: bench.address)
        defer { connection.close() }
        try await waitUntil(10, "avahi-daemon on the bus") { try await connection.getNameOwner("org.freedesktop.Avahi") != nil }
        try bench.publish(name: "gb-taken", type: Self.type, port: 1234)
        try await waitUntil(10, "the rival is listed") { try bench.browse(Self.type).contains { $0.name == "gb-taken" } }

        let announcer = AvahiAnnouncer(connection: connection, service: Self.service("gb-taken"))
        await announcer.start()
        let renamed = try await nextEvent(announcer.events, 10, "renamed") { _ in true }
        #expect(renamed == .renamed(from: "gb-taken", to: "gb-taken-2"))
        let announced = try await nextEvent(announcer.events, 10, "announced") { _ in true }
        #expect(announced == .announced(name: "gb-taken-2"))
        try await waitUntil(10, "both listed") {
            let listed = try bench.browse(Self.type)
            return listed.contains { $0.name == "gb-taken-2" && $0.port == 6053 } && listed.contains { $0.name == "gb-taken" && $0.port == 1234 }
        }
        await announcer.stop()
    }
}

@Suite struct AvahiServiceTests {
    @Test func alternativeNamesStayWithinADNSLabel() {
        #expect(AvahiService.alternativeName("living-room", attempt: 1) == "living-room-2")
        #expect(AvahiService.alternativeName("living-room", attempt: 9) == "living-room-10")
        let long = String(repeating: "a", count: 63)
        #expect(AvahiService.alternativeName(long, attempt: 1) == String(repeating: "a", count: 61) + "-2")
    }

    @Test func txtIsKeyEqualsValueBytes() {
        let service = AvahiService(name: "n", type: "_esphomelib._tcp", port: 6053,
                                   txt: [(key: "friendly_name", value: "Küche"), (key: "mac", value: "c0ffee000001")])
        #expect(service.txtBytes == [Array("friendly_name=Küche".utf8), Array("mac=c0ffee000001".utf8)])
    }
}

