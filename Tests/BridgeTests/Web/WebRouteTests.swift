import Config
import HTTPServer
import Testing
@testable import BridgeFeatureHost
@testable import BridgeFeatures
@testable import BridgeModel
@testable import BridgeWeb

/// What a request to the web page may ask for, and what is refused before anything is done (docs/web.md).
@Suite struct WebRouteTests {
    static let host = "127.0.0.1:8780"

    static func request(_ method: String, _ path: String, body: String = "", host: String? = WebRouteTests.host,
                        origin: String? = "http://127.0.0.1:8780", token: String? = "token1",
                        cookie: String? = nil) -> HTTPRequest {
        var headers: [HTTPField] = []
        if let host { headers.append(HTTPField("host", host)) }
        if let origin { headers.append(HTTPField("origin", origin)) }
        if let token { headers.append(HTTPField("x-csrf-token", token)) }
        if let cookie { headers.append(HTTPField("cookie", cookie)) }
        return HTTPRequest(method: method, path: path, headers: headers, body: Array(body.utf8), peer: "127.0.0.1")
    }

    static func guardWithout() -> WebGuard {
        nonisolated(unsafe) var n = 0
        return WebGuard(settings: WebSettings(), machineNames: [], random: { n += 1; return "token\(n)" })
    }

    static func route(_ request: HTTPRequest, _ guardian: inout WebGuard) -> WebRoute {
        let access = guardian.access(cookieHeader: request.header("cookie"), now: .now)
        return WebRoute.route(request, guard: guardian, access: access)
    }

    static func status(_ route: WebRoute) -> Int? {
        if case .refused(let response) = route { return response.status }
        return nil
    }

    @Test func thePageAndItsFilesAreServedAndNothingElse() {
        var g = Self.guardWithout()
        guard case .asset(let type, _) = Self.route(Self.request("GET", "/"), &g) else {
            Issue.record("no page")
            return
        }
        #expect(type.hasPrefix("text/html"))
        #expect(Self.status(Self.route(Self.request("GET", "/etc/passwd"), &g)) == 404)
        #expect(Self.status(Self.route(Self.request("GET", "/api/nothing"), &g)) == 404)
        #expect(Self.status(Self.route(Self.request("DELETE", "/api/state"), &g)) == 405)
        #expect(Self.status(Self.route(Self.request("GET", "/", host: "evil.example"), &g)) == 421)
        #expect(Self.status(Self.route(Self.request("GET", "/", host: nil), &g)) == 421)
    }

    @Test func aStateChangeNeedsItsOriginAndToken() {
        var g = Self.guardWithout()
        let body = #"{"payload":"ON"}"#
        guard case .command(let device, let channel, let payload) =
                Self.route(Self.request("POST", "/api/device/desk led/led/set", body: body), &g) else {
            Issue.record("not a command")
            return
        }
        #expect(device == "desk led" && channel == "led" && payload == "ON")
        #expect(Self.status(Self.route(Self.request("POST", "/api/device/d/led/set", body: body, origin: nil), &g)) == 403)
        #expect(Self.status(Self.route(Self.request("POST", "/api/device/d/led/set", body: body,
                                                    origin: "http://evil.example"), &g)) == 403)
        #expect(Self.status(Self.route(Self.request("POST", "/api/device/d/led/set", body: body, token: nil), &g)) == 403)
        #expect(Self.status(Self.route(Self.request("POST", "/api/device/d/led/set", body: body, token: "x"), &g)) == 403)
        #expect(Self.status(Self.route(Self.request("POST", "/api/device/d/led/set", body: "{"), &g)) == 400)
    }

    @Test func bridgeRequestsAreTheAPIsVerbsWithAnObjectBody() {
        var g = Self.guardWithout()
        guard case .request(let verb, let body) = Self.route(Self.request("POST", "/api/request/device/add",
                                                                          body: #"{"name":"x"}"#), &g) else {
            Issue.record("not a request")
            return
        }
        #expect(verb == "device/add" && body == #"{"name":"x"}"#)
        #expect(Self.status(Self.route(Self.request("POST", "/api/request/reboot", body: "{}"), &g)) == 404)
        #expect(Self.status(Self.route(Self.request("POST", "/api/request/health", body: "[1]"), &g)) == 400)
        #expect(Self.status(Self.route(Self.request("POST", "/api/request/health", body: "not json"), &g)) == 400)
    }

    @Test func withAPasswordNothingButTheLoginWithoutASession() {
        var settings = WebSettings()
        settings.password = Secret("pw")
        nonisolated(unsafe) var n = 0
        var g = WebGuard(settings: settings, machineNames: [], random: { n += 1; return "t\(n)" })
        #expect(Self.status(Self.route(Self.request("GET", "/api/state"), &g)) == 401)
        #expect(Self.status(Self.route(Self.request("GET", "/api/events"), &g)) == 401)
        #expect(Self.status(Self.route(Self.request("POST", "/api/request/devices", body: "{}"), &g)) == 401)
        guard case .session = Self.route(Self.request("GET", "/api/session"), &g) else {
            Issue.record("no session answer")
            return
        }
        guard case .login(let password) = Self.route(Self.request("POST", "/api/login", body: #"{"password":"pw"}"#,
                                                                  token: nil), &g) else {
            Issue.record("no login")
            return
        }
        #expect(password == "pw")
        guard case .accepted(let session, let csrf) = g.login(password, from: "127.0.0.1", now: .now) else {
            Issue.record("not accepted")
            return
        }
        guard case .state = Self.route(Self.request("GET", "/api/state", cookie: "gb_session=\(session)"), &g) else {
            Issue.record("the session does not open the state")
            return
        }
        #expect(Self.status(Self.route(Self.request("POST", "/api/logout", token: "t1", cookie: "gb_session=\(session)"),
                                       &g)) == 403)
        guard case .logout = Self.route(Self.request("POST", "/api/logout", token: csrf, cookie: "gb_session=\(session)"),
                                        &g) else {
            Issue.record("no logout")
            return
        }
    }
}
