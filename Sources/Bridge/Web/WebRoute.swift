import Codecs
import HTTPServer

/// What a request to the web page asks for (docs/web.md), once the guard let it through. The paths and their rules
/// are here; the answers are the feature's.
enum WebRoute {
    case asset(contentType: String, body: StaticString)
    case session
    case login(password: String)
    case logout
    case state
    case log
    case events
    /// A bridge API request (`B/bridge/request/<verb>`), the body as the broker would carry it.
    case request(verb: String, body: String)
    /// `B/<device>/<channel>/set` with `payload`.
    case command(device: String, channel: String, payload: String)
    /// Answered at once.
    case refused(HTTPResponse)

    /// The verbs the page may ask the bridge API for: every one of docs/bridge-api.md.
    static let verbs: Set<String> = ["devices", "device/add", "device/remove", "device/rearm", "scan", "inspect", "health"]

    /// Reads `request` under `guard`'s rules; `access` is the guard's verdict on its session.
    static func route(_ request: HTTPRequest, guard: WebGuard, access: WebGuard.Access) -> WebRoute {
        let host = request.header("host")
        guard `guard`.acceptsHost(host) else { return .refused(.error(421, "unknown host name")) }
        let path = request.path
        if request.method == "GET" || request.method == "HEAD" {
            if !path.hasPrefix("/api/") {
                guard let asset = WebAssets.asset(path) else { return .refused(.error(404, "no such page")) }
                return .asset(contentType: asset.contentType, body: asset.body)
            }
        } else if request.method != "POST" {
            return .refused(.error(405, "method not allowed"))
        }
        if path == "/api/session" {
            return request.method == "GET" ? .session : .refused(.error(405, "method not allowed"))
        }
        if request.method == "POST" {
            guard `guard`.acceptsOrigin(request.header("origin"), host: host) else {
                return .refused(.error(403, "cross-site request refused"))
            }
        }
        if path == "/api/login" {
            guard request.method == "POST" else { return .refused(.error(405, "method not allowed")) }
            guard let body = try? JSONValue.parse(String(decoding: request.body, as: UTF8.self)),
                  let password = body["password"]?.stringValue else {
                return .refused(.error(400, "expected {\"password\": …}"))
            }
            return .login(password: password)
        }
        guard case .allowed = access else { return .refused(.error(401, "log in first")) }
        if request.method == "GET" {
            switch path {
            case "/api/state": return .state
            case "/api/log": return .log
            case "/api/events": return .events
            default: return .refused(.error(404, "no such path"))
            }
        }
        guard `guard`.tokenMatches(request.header("x-csrf-token"), access) else {
            return .refused(.error(403, "missing or wrong CSRF token; reload the page"))
        }
        if path == "/api/logout" { return .logout }
        let text = String(decoding: request.body, as: UTF8.self)
        let body = try? JSONValue.parse(text.isEmpty ? "{}" : text)
        if path.hasPrefix("/api/request/") {
            let verb = String(path.dropFirst("/api/request/".count))
            guard verbs.contains(verb) else { return .refused(.error(404, "no such request: \(verb)")) }
            guard case .object? = body else { return .refused(.error(400, "the body must be a JSON object")) }
            return .request(verb: verb, body: text.isEmpty ? "{}" : text)
        }
        if path.hasPrefix("/api/device/"), path.hasSuffix("/set") {
            let middle = path.dropFirst("/api/device/".count).dropLast("/set".count)
            // Names may hold "/" only escaped, which the server decoded: the channel is the last level.
            guard let slash = middle.lastIndex(of: "/"), !middle[..<slash].isEmpty,
                  !middle[middle.index(after: slash)...].isEmpty else {
                return .refused(.error(404, "no such path"))
            }
            guard let payload = body?["payload"]?.stringValue else {
                return .refused(.error(400, "expected {\"payload\": \"…\"}"))
            }
            return .command(device: String(middle[..<slash]), channel: String(middle[middle.index(after: slash)...]),
                            payload: payload)
        }
        return .refused(.error(404, "no such path"))
    }
}
