import Config

/// Who may see and change what through the web page (docs/web.md, "Security"), decided from the request's headers
/// and the clock alone: sessions, CSRF tokens, the login throttle, and the `Host` and `Origin` checks. A value type
/// owned by the web feature's loop; no I/O.
///
/// Invariants:
/// - with a password, nothing but the page's files, `GET /api/session` and `POST /api/login` is served without a
///   session; without one (loopback only) every request is its own;
/// - every state change carries the CSRF token of its session (or of the bridge, without a password) and an `Origin`
///   of the same host as its `Host`;
/// - after `maxFailures` wrong passwords from one address, that address gets one attempt per `retryAfter`, the rest
///   are refused; the table of addresses and the table of sessions are bounded, the oldest entry going first.
struct WebGuard {
    struct Session {
        let csrf: String
        var lastUsed: ContinuousClock.Instant
    }

    struct Failures {
        var count: Int
        var last: ContinuousClock.Instant
    }

    enum Access: Equatable {
        case allowed(csrf: String)
        /// 401: log in first.
        case needsLogin
    }

    enum Login: Equatable {
        /// The new session's cookie value and its CSRF token.
        case accepted(session: String, csrf: String)
        case wrongPassword
        /// 429, with the seconds to wait.
        case throttled(seconds: Int)
    }

    static let maxFailures = 5
    static let retryAfter: Duration = .seconds(10)
    static let idleTimeout: Duration = .seconds(7 * 24 * 3600)
    static let maxSessions = 64
    static let maxAddresses = 1024
    static let cookieName = "gb_session"

    let password: Secret?
    /// Names this page is reached by besides IP literals: `localhost`, the machine's names, the listen host and
    /// `public_url`'s host, lowercased and without a port.
    let hostNames: Set<String>
    /// Without a password there are no sessions, and one token guards every state change.
    let sharedCSRF: String
    private(set) var sessions: [String: Session] = [:]
    private(set) var failures: [String: Failures] = [:]
    private var random: () -> String

    init(settings: WebSettings, machineNames: [String], random: @escaping () -> String = WebGuard.randomToken) {
        password = settings.password
        var names: Set<String> = ["localhost"]
        for name in machineNames where !name.isEmpty {
            names.insert(name.lowercased())
            names.insert(name.lowercased() + ".local")
        }
        names.insert(settings.listen.host.lowercased())
        if let url = settings.publicURL { names.insert(Self.hostOnly(url.hostAndPort)) }
        hostNames = names
        self.random = random
        sharedCSRF = random()
    }

    // MARK: - Requests

    /// A `Host` header a browser sends for this page: an IP literal, or one of `hostNames`. A name the page does not
    /// know is refused, so a page of another site whose name was pointed at this machine (DNS rebinding) reads nothing.
    func acceptsHost(_ host: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        let name = Self.hostOnly(host.lowercased())
        return Self.isIPLiteral(name) || hostNames.contains(name)
    }

    /// A state change's `Origin` must be this page's own: the same host and port as its `Host`.
    func acceptsOrigin(_ origin: String?, host: String?) -> Bool {
        guard let origin = origin?.lowercased(), let host = host?.lowercased() else { return false }
        for scheme in ["http://", "https://"] where origin.hasPrefix(scheme) {
            return origin.dropFirst(scheme.count) == host
        }
        return false
    }

    /// Whether `cookieHeader` names a live session (and touches it); without a password every request is allowed.
    mutating func access(cookieHeader: String?, now: ContinuousClock.Instant) -> Access {
        guard password != nil else { return .allowed(csrf: sharedCSRF) }
        guard let id = Self.cookie(Self.cookieName, in: cookieHeader), var session = sessions[id] else {
            return .needsLogin
        }
        guard now - session.lastUsed < Self.idleTimeout else {
            sessions[id] = nil
            return .needsLogin
        }
        session.lastUsed = now
        sessions[id] = session
        return .allowed(csrf: session.csrf)
    }

    /// The token a state change carries must be the one of its access (compared in constant time).
    func tokenMatches(_ token: String?, _ access: Access) -> Bool {
        guard case .allowed(let csrf) = access, let token else { return false }
        return Self.constantTimeEqual(Array(token.utf8), Array(csrf.utf8))
    }

    mutating func login(_ attempt: String, from address: String, now: ContinuousClock.Instant) -> Login {
        guard let password else { return .accepted(session: "", csrf: sharedCSRF) }
        if let failed = failures[address], failed.count >= Self.maxFailures {
            let wait = failed.last + Self.retryAfter - now
            if wait > .zero { return .throttled(seconds: max(1, Int(wait.components.seconds) + 1)) }
        }
        guard Self.constantTimeEqual(Array(attempt.utf8), Array(password.value.utf8)) else {
            if failures[address] == nil, failures.count >= Self.maxAddresses,
               let oldest = failures.min(by: { $0.value.last < $1.value.last })?.key {
                failures[oldest] = nil
            }
            failures[address, default: Failures(count: 0, last: now)].count += 1
            failures[address]?.last = now
            return .wrongPassword
        }
        failures[address] = nil
        if sessions.count >= Self.maxSessions, let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            sessions[oldest] = nil
        }
        let id = random(), csrf = random()
        sessions[id] = Session(csrf: csrf, lastUsed: now)
        return .accepted(session: id, csrf: csrf)
    }

    mutating func logout(cookieHeader: String?) {
        if let id = Self.cookie(Self.cookieName, in: cookieHeader) { sessions[id] = nil }
    }

    // MARK: - Helpers

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = generator.next() as UInt64
            let text = String(word, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
    }

    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpaces == name else { continue }
            return String(pair[1].trimmingSpaces)
        }
        return nil
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port` → the host alone (brackets kept off).
    static func hostOnly(_ text: String) -> String {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon { return String(text[..<colon]) }
        return text
    }

    static func isIPLiteral(_ host: String) -> Bool {
        if host.contains(":") { return host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && (Int(part) ?? 256) <= 255
        }
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
