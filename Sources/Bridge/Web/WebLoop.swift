import BridgeFeatureHost
import BridgeFeatures
import BridgeModel
import Codecs
import Config
import HTTPServer
import MQTT

/// The web feature's state and what it does with each input (docs/web.md): the server's life (started with the
/// config, stopped and started again when `web:` changes, retried while its address is in use), each request under
/// the guard's rules, and the followers of `/api/events`. Owned by the feature's loop alone; what would wait is
/// returned as `WebJob`s.
struct WebLoop {
    /// A stream gets news at most this often; the page's values are at most this late.
    static let tick: Duration = .milliseconds(500)
    /// A listen address in use (another bridge here) is tried again after this long.
    static let retry: Duration = .seconds(30)
    static let requestTimeout: Duration = .seconds(30)
    /// A scan lasts up to 60 s, an inspection up to 20 s, and both may wait for the radio first.
    static let longRequestTimeout: Duration = .seconds(90)

    private struct Follower {
        let stream: HTTPStream
        var lastState: String?
        var lastLog: UInt64
    }

    let feature: WebFeature
    let context: FeatureContext
    let handler: any HTTPHandler
    let streamEnded: @Sendable (Int) -> Void

    private var config: BridgeConfig?
    private var server: HTTPServer?
    private var guardian: WebGuard?
    private var retryToken: UInt64 = 0
    private var followers: [Int: Follower] = [:]
    private var nextFollower = 0
    private var ticking = false
    private var errors = WebDeviceErrors()

    init(feature: WebFeature, context: FeatureContext, handler: any HTTPHandler,
         streamEnded: @escaping @Sendable (Int) -> Void) {
        self.feature = feature
        self.context = context
        self.handler = handler
        self.streamEnded = streamEnded
    }

    // MARK: - Inputs

    mutating func handle(_ event: CoreEvent) -> [WebJob] {
        switch event {
        case .configApplied(_, let new):
            let old = config
            config = new
            context.recentLog.watch(BridgeTopics(settings: new.mqtt).bridgeLog)
            let names = Set(new.devices.map(\.name))
            context.passiveReadings.keep(only: names)
            errors.keep(only: names)
            guard old?.web != new.web || (server == nil && new.web.enabled) else { return [] }
            stop()
            retryToken += 1
            guardian = WebGuard(settings: new.web, machineNames: feature.machineNames)
            return new.web.enabled ? start(new.web) : []
        case .deviceEvent(let device, .error(let message)):
            errors.record(device.name, message, at: .now)
        case .rejected(let rejection):
            if let config, let device = Self.device(of: rejection.topic, in: config) {
                errors.record(device, rejection.reason, at: .now)
            }
        default:
            break
        }
        return []
    }

    mutating func retry(_ token: UInt64) -> [WebJob] {
        guard token == retryToken, server == nil, let config, config.web.enabled else { return [] }
        return start(config.web)
    }

    mutating func streamEnded(_ id: Int) -> [WebJob] {
        followers[id] = nil
        return []
    }

    /// Each follower gets the state when it changed since its last copy, and the log entries it has not seen.
    mutating func tick() -> [WebJob] {
        ticking = false
        guard let config, !followers.isEmpty else { return [] }
        let text = stateJSON(config)
        let now = ContinuousClock.now
        for (id, var follower) in followers {
            if let text, text != follower.lastState {
                follower.stream.send(event: "state", data: text)
                follower.lastState = text
            }
            for entry in context.recentLog.entries(after: follower.lastLog) {
                follower.stream.send(event: "log", data: Self.logEntry(entry, now: now))
                follower.lastLog = entry.sequence
            }
            followers[id] = follower
        }
        return nextTick()
    }

    /// Closes the server and its streams (the bridge stops, or `web:` changed).
    mutating func stop() {
        server?.stop()
        server = nil
        for follower in followers.values { follower.stream.close() }
        followers = [:]
    }

    // MARK: - Requests

    mutating func serve(_ request: HTTPRequest, _ responder: HTTPResponder) -> [WebJob] {
        let respond = { (response: HTTPResponse) in responder.respond(Self.secured(response)) }
        guard let config, var guardian else {
            respond(.error(503, "the bridge is starting"))
            return []
        }
        defer { self.guardian = guardian }
        let now = ContinuousClock.now
        let access = guardian.access(cookieHeader: request.header("cookie"), now: now)
        switch WebRoute.route(request, guard: guardian, access: access) {
        case .refused(let response):
            respond(response)
        case .asset(let type, let body):
            var response = HTTPResponse(status: 200, headers: [HTTPField("Content-Type", type),
                                                               HTTPField("Cache-Control", "no-cache")])
            if request.method == "GET" { response.body = body.withUTF8Buffer { Array($0) } }
            respond(response)
        case .session:
            let csrf: JSONValue
            if case .allowed(let token) = access { csrf = .string(token) } else { csrf = .null }
            respond(.json(JSONValue.object([
                ("password", .bool(config.web.password != nil)),
                ("authenticated", .bool(access != .needsLogin)), ("csrf", csrf),
            ]).serialized))
        case .login(let password):
            respond(login(password, request, &guardian, now: now))
        case .logout:
            guardian.logout(cookieHeader: request.header("cookie"))
            var response = HTTPResponse.json("{}")
            response.headers.append(HTTPField("Set-Cookie", "\(WebGuard.cookieName)=; HttpOnly; SameSite=Strict; "
                + "Path=/; Max-Age=0"))
            respond(response)
        case .state:
            guard let text = stateJSON(config) else {
                respond(.error(503, "the bridge is stopping"))
                return []
            }
            respond(.json(text))
        case .log:
            let entries = context.recentLog.entries().map { Self.logEntry($0, now: now) }
            respond(.json("{\"entries\":[" + entries.joined(separator: ",") + "]}"))
        case .events:
            return follow(responder, config)
        case .request(let verb, let body):
            guard config.bridgeAPI else {
                respond(.error(403, "the bridge API is off (bridge_api: false): the page can only show"))
                return []
            }
            let topic = config.fleet == nil ? "\(config.mqtt.baseTopic)/bridge/request/\(verb)"
                : BridgeTopics(base: config.mqtt.baseTopic, bridgeID: config.fleet?.id).bridgeOwn("request") + "/" + verb
            feature.logger.info("web page: \(verb) from \(request.peer)")
            let message = MQTTMessage(topic: topic, string: body, qos: .atLeastOnce, retain: false)
            let timeout = verb == "scan" || verb == "inspect" ? Self.longRequestTimeout : Self.requestTimeout
            return [.ask(message, timeout: timeout, responder, onTimeout: .error(504, "the bridge did not answer"))]
        case .command(let device, let channel, let payload):
            guard let target = config.devices.first(where: { $0.name == device }),
                  let writable = target.channels.first(where: { $0.name == channel }) else {
                respond(.json(Self.commandError("no channel \(channel) on device \(device)"), status: 404))
                return []
            }
            let topic = BridgeTopics(settings: config.mqtt).set(target, writable)
            let message = MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: false)
            return [.ask(message, timeout: Self.requestTimeout, responder,
                         onTimeout: .json(Self.commandError("no answer from the device in time")))]
        }
        return []
    }

    private func login(_ password: String, _ request: HTTPRequest, _ guardian: inout WebGuard,
                       now: ContinuousClock.Instant) -> HTTPResponse {
        switch guardian.login(password, from: request.peer, now: now) {
        case .accepted(let session, let csrf):
            var response = HTTPResponse.json(JSONValue.object([("csrf", .string(csrf))]).serialized)
            if !session.isEmpty {
                let secure = request.header("x-forwarded-proto")?.lowercased() == "https" ? "; Secure" : ""
                response.headers.append(HTTPField("Set-Cookie", "\(WebGuard.cookieName)=\(session); HttpOnly; "
                    + "SameSite=Strict; Path=/\(secure)"))
            }
            return response
        case .wrongPassword:
            feature.logger.warning("web page: wrong password from \(request.peer)")
            return .error(401, "wrong password")
        case .throttled(let seconds):
            var response = HTTPResponse.error(429, "too many attempts; wait \(seconds) s")
            response.headers.append(HTTPField("Retry-After", String(seconds)))
            return response
        }
    }

    /// A new follower of `/api/events` gets the state at once, then news from the tick.
    private mutating func follow(_ responder: HTTPResponder, _ config: BridgeConfig) -> [WebJob] {
        let stream = responder.stream(headers: Self.securityHeaders)
        let id = nextFollower
        nextFollower += 1
        let ended = streamEnded
        stream.onClose { ended(id) }
        var follower = Follower(stream: stream, lastState: nil, lastLog: context.recentLog.entries().last?.sequence ?? 0)
        if let text = stateJSON(config) {
            stream.send(event: "state", data: text)
            follower.lastState = text
        }
        followers[id] = follower
        return nextTick()
    }

    private mutating func nextTick() -> [WebJob] {
        guard !ticking, !followers.isEmpty else { return [] }
        ticking = true
        return [.after(Self.tick, .tick)]
    }

    private mutating func start(_ settings: WebSettings) -> [WebJob] {
        let candidate = HTTPServer(listen: settings.listen.description, handler: handler, host: feature.host)
        do throws(HTTPServerError) {
            try candidate.start()
            server = candidate
            feature.logger.notice("web page on http://\(settings.listen)/")
            return []
        } catch {
            feature.logger.error("web page not served: \(error); trying again in \(Self.retry)")
            retryToken += 1
            return [.after(Self.retry, .retry(retryToken))]
        }
    }

    // MARK: - Views

    private func stateJSON(_ config: BridgeConfig) -> String? {
        guard let state = context.state else { return nil }
        let health = HealthView.json(version: feature.version, started: feature.started, broker: feature.broker,
                                     adverts: feature.adverts, state: state, bridge: config.fleet?.id)
        let (context, errors) = (context, errors)
        return WebStateView.json(WebStateView.Inputs(
            health: health, state: state, listing: context.publishedListing.current,
            values: { device in
                context.latestValues(of: device.name)?.map { (name: $0.channel, payload: $0.payload) }
                    ?? context.passiveReadings.of(device.name)
            },
            errors: { errors.of($0) }, baseTopic: config.mqtt.baseTopic, fleetID: config.fleet?.id, now: .now
        )).serialized
    }

    static func logEntry(_ entry: RecentLog.Entry, now: ContinuousClock.Instant) -> String {
        var members: [(String, JSONValue)] = [("seq", .int(Int(entry.sequence)))]
        if case .object(let fields)? = try? JSONValue.parse(entry.payload) { members += fields }
        members.append(("age_s", .int(WebStateView.seconds(now - entry.at))))
        return JSONValue.object(members).serialized
    }

    static func commandError(_ text: String) -> String {
        JSONValue.object([("status", "error"), ("error", .string(text))]).serialized
    }

    /// The device (by name) whose command topic `topic` is.
    static func device(of topic: String, in config: BridgeConfig) -> String? {
        let base = config.mqtt.baseTopic + "/"
        guard topic.hasPrefix(base) else { return nil }
        let level = topic.dropFirst(base.count).prefix { $0 != "/" }
        return config.devices.first { $0.topicLevel == level }?.name
    }

    /// What every answer carries: the page runs only its own script and style, is never framed, and sends no
    /// referrer; its API's answers are never cached.
    static let securityHeaders = [
        HTTPField("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        HTTPField("X-Content-Type-Options", "nosniff"),
        HTTPField("X-Frame-Options", "DENY"),
        HTTPField("Referrer-Policy", "no-referrer"),
    ]

    static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers += securityHeaders
        if !response.headers.contains(where: { $0.name.lowercased() == "cache-control" }) {
            response.headers.append(HTTPField("Cache-Control", "no-store"))
        }
        return response
    }
}
