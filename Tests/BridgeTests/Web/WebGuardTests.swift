import Config
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFeatures
@testable import BridgeModel
@testable import BridgeWeb

/// Who may see and change what through the web page (docs/web.md, "Security"), without a server or a clock.
@Suite struct WebGuardTests {
    static func settings(password: String? = nil, listen: String = "127.0.0.1:8780", publicURL: String? = nil)
        -> WebSettings {
        var settings = WebSettings()
        settings.listen = WebListen.parse(listen)!
        settings.password = password.map(Secret.init)
        settings.publicURL = publicURL.flatMap(PublicURL.parse)
        return settings
    }

    static func counter() -> () -> String {
        nonisolated(unsafe) var n = 0
        return { n += 1; return "token\(n)" }
    }

    let t0 = ContinuousClock.now

    @Test func withoutPasswordEveryRequestIsAllowedWithTheSharedToken() {
        var g = WebGuard(settings: Self.settings(), machineNames: ["pi"], random: Self.counter())
        #expect(g.access(cookieHeader: nil, now: t0) == .allowed(csrf: "token1"))
        #expect(g.tokenMatches("token1", .allowed(csrf: "token1")))
        #expect(!g.tokenMatches("token2", .allowed(csrf: "token1")))
        #expect(!g.tokenMatches(nil, .allowed(csrf: "token1")))
        #expect(!g.tokenMatches("token1", .needsLogin))
    }

    @Test func aSessionComesFromTheRightPasswordOnly() {
        var g = WebGuard(settings: Self.settings(password: "s3cret"), machineNames: [], random: Self.counter())
        #expect(g.access(cookieHeader: nil, now: t0) == .needsLogin)
        #expect(g.login("wrong", from: "10.0.0.2", now: t0) == .wrongPassword)
        guard case .accepted(let session, let csrf) = g.login("s3cret", from: "10.0.0.2", now: t0) else {
            Issue.record("not accepted")
            return
        }
        #expect(g.access(cookieHeader: "a=b; gb_session=\(session); c=d", now: t0) == .allowed(csrf: csrf))
        #expect(g.access(cookieHeader: "gb_session=forged", now: t0) == .needsLogin)
        g.logout(cookieHeader: "gb_session=\(session)")
        #expect(g.access(cookieHeader: "gb_session=\(session)", now: t0) == .needsLogin)
    }

    @Test func fiveWrongPasswordsThenOneAttemptPerTenSeconds() {
        var g = WebGuard(settings: Self.settings(password: "pw"), machineNames: [], random: Self.counter())
        for _ in 0..<WebGuard.maxFailures { #expect(g.login("no", from: "10.0.0.9", now: t0) == .wrongPassword) }
        // Even the right password waits: the throttle does not tell a guess that hit.
        guard case .throttled = g.login("pw", from: "10.0.0.9", now: t0 + .seconds(1)) else {
            Issue.record("not throttled")
            return
        }
        // Another address is not held back by this one.
        #expect(g.login("no", from: "10.0.0.10", now: t0) == .wrongPassword)
        #expect(g.login("no", from: "10.0.0.9", now: t0 + .seconds(11)) == .wrongPassword)
        guard case .throttled = g.login("no", from: "10.0.0.9", now: t0 + .seconds(12)) else {
            Issue.record("not throttled after the slow attempt")
            return
        }
        guard case .accepted = g.login("pw", from: "10.0.0.9", now: t0 + .seconds(22)) else {
            Issue.record("the right password after the wait was refused")
            return
        }
    }

    @Test func sessionsAndAddressesAreBounded() {
        var g = WebGuard(settings: Self.settings(password: "pw"), machineNames: [], random: Self.counter())
        for index in 0..<(WebGuard.maxSessions + 10) {
            _ = g.login("pw", from: "10.0.0.1", now: t0 + .seconds(index))
        }
        #expect(g.sessions.count == WebGuard.maxSessions)
        for index in 0..<(WebGuard.maxAddresses + 10) {
            _ = g.login("no", from: "addr\(index)", now: t0 + .seconds(index))
        }
        #expect(g.failures.count == WebGuard.maxAddresses)
    }

    @Test func hostNamesFromAnotherSiteAreRefused() {
        let g = WebGuard(settings: Self.settings(publicURL: "https://bridge.example.org:8443/gb"),
                         machineNames: ["raspberrypi"], random: Self.counter())
        for host in ["127.0.0.1:8780", "localhost:8780", "[::1]:8780", "192.168.1.20:8780", "raspberrypi:8780",
                     "RaspberryPi.local:8780", "bridge.example.org:8443", "bridge.example.org"] {
            #expect(g.acceptsHost(host), "\(host)")
        }
        for host in ["evil.example.com", "evil.example.com:8780", "", "127.0.0.1.evil.com"] {
            #expect(!g.acceptsHost(host), "\(host)")
        }
        #expect(!g.acceptsHost(nil))
    }

    @Test func aStateChangeNeedsItsOwnOrigin() {
        let g = WebGuard(settings: Self.settings(), machineNames: [], random: Self.counter())
        #expect(g.acceptsOrigin("http://127.0.0.1:8780", host: "127.0.0.1:8780"))
        #expect(g.acceptsOrigin("https://bridge.example.org", host: "bridge.example.org"))
        #expect(!g.acceptsOrigin("http://evil.example.com", host: "127.0.0.1:8780"))
        #expect(!g.acceptsOrigin("http://127.0.0.1:8781", host: "127.0.0.1:8780"))
        #expect(!g.acceptsOrigin("null", host: "127.0.0.1:8780"))
        #expect(!g.acceptsOrigin(nil, host: "127.0.0.1:8780"))
    }

    @Test func listenAndPublicURLParse() {
        #expect(WebListen.parse("0.0.0.0:8780") == WebListen(host: "0.0.0.0", port: 8780))
        #expect(WebListen.parse("[::]:80") == WebListen(host: "::", port: 80))
        #expect(WebListen.parse("localhost:8780")?.isLoopback == true)
        #expect(WebListen.parse("[::1]:8780")?.isLoopback == true)
        #expect(WebListen.parse("0.0.0.0:8780")?.isLoopback == false)
        for bad in ["8780", "host:", "host:0", "host:65536", "[::1]8780", "a b:1", ":8780", "[zz]:1"] {
            #expect(WebListen.parse(bad) == nil, "\(bad)")
        }
        #expect(PublicURL.parse("https://pi.example:8443/gb/")?.text == "https://pi.example:8443/gb")
        #expect(PublicURL.parse("https://pi.example:8443/gb/")?.hostAndPort == "pi.example:8443")
        #expect(PublicURL.parse("ftp://pi") == nil)
        #expect(PublicURL.parse("http://") == nil)
        #expect(PublicURL.parse("http://a b") == nil)
        #expect(WebLinks.device("desk led/1", at: PublicURL.parse("http://pi:8780")!) == "http://pi:8780/#/device/desk%20led%2F1")
    }
}
