import BridgeAdverts
import BridgeFeatureHost
import BridgeFeatures
import BridgeModel
import Codecs
import Config
import HTTPServer
import Logging
import MQTT
import Synchronization

/// The web page (docs/web.md): an HTTP server on the bridge's event loop (`HTTPServer`, never blocking it) whose
/// requests come here. It shows what MQTT shows, read from the same sources (the read model, the sessions' last
/// values, the adverts feature's readings, the bridge API's listing and `B/bridge/log`), and changes things only by
/// making the requests a broker client makes (`FeatureContext.ask`): `…/set` and `B/bridge/request/<verb>`, answers
/// and errors included.
///
/// One loop: core events, requests, the live tick and the server's retries arrive as inputs, so the guard, the
/// streams and the server are this loop's alone. The tick exists only while a browser follows `/api/events`: with no
/// page open the feature sleeps.
package struct WebFeature: BridgeFeature {
    let version: String
    let started: ContinuousClock.Instant
    let broker: any BrokerStatus
    let adverts: AdvertCounts
    let host: any HTTPLoopHost
    let machineNames: [String]
    let logger: Logger

    package init(version: String, started: ContinuousClock.Instant, broker: any BrokerStatus, adverts: AdvertCounts,
                 host: any HTTPLoopHost, machineNames: [String], logger: Logger) {
        self.version = version
        self.started = started
        self.broker = broker
        self.adverts = adverts
        self.host = host
        self.machineNames = machineNames
        self.logger = logger
    }

    /// A stream gets news at most this often; the page's values are at most this late.
    static let tick: Duration = .milliseconds(500)
    /// A listen address in use (another bridge here) is tried again after this long.
    static let retry: Duration = .seconds(30)
    static let requestTimeout: Duration = .seconds(30)
    /// A scan lasts up to 60 s, an inspection up to 20 s, and both may wait for the radio first.
    static let longRequestTimeout: Duration = .seconds(90)
    /// Requests waiting for the loop at most; beyond, 503 at once (a page never has more than a few).
    static let maxPending = 64

    enum Input: Sendable {
        case event(CoreEvent)
        case request(HTTPRequest, HTTPResponder)
        case tick
        case retry(UInt64)
        case streamEnded(Int)
    }

    private struct Follower {
        let stream: HTTPStream
        var lastState: String?
        var lastLog: UInt64
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        let pending = PendingCount(limit: Self.maxPending)
        let handler = HTTPHandlerFunction { request, responder in
            guard pending.admit() else {
                return responder.respond(.error(503, "busy; try again"))
            }
            input.yield(.request(request, responder))
        }
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events { input.yield(.event(event)) }
                input.finish()
            }
            var config: BridgeConfig?
            var server: HTTPServer?
            var guardian: WebGuard?
            var retryToken: UInt64 = 0
            var followers: [Int: Follower] = [:]
            var nextFollower = 0
            var ticking = false
            var errors = WebDeviceErrors()

            func stopServer() {
                server?.stop()
                server = nil
                for follower in followers.values { follower.stream.close() }
                followers = [:]
            }

            func startServer(_ settings: WebSettings) {
                let candidate = HTTPServer(listen: settings.listen.description, handler: handler, host: host)
                do throws(HTTPServerError) {
                    try candidate.start()
                    server = candidate
                    logger.notice("web page on http://\(settings.listen)/")
                } catch {
                    logger.error("web page not served: \(error); trying again in \(Self.retry)")
                    retryToken += 1
                    let token = retryToken
                    group.addTask {
                        try? await Task.sleep(for: Self.retry)
                        input.yield(.retry(token))
                    }
                }
            }

            func state(_ config: BridgeConfig) -> String? {
                guard let state = context.state else { return nil }
                let health = HealthView.json(version: version, started: started, broker: broker, adverts: adverts,
                                             state: state, bridge: config.fleet?.id)
                let passive = context.passiveReadings
                let now = ContinuousClock.now
                return WebStateView.json(WebStateView.Inputs(
                    health: health, state: state, listing: context.publishedListing.current,
                    values: { device in
                        if let values = context.latestValues(of: device.name) {
                            return values.map { (name: $0.channel, payload: $0.payload) }
                        }
                        return passive.of(device.name)
                    },
                    errors: { errors.of($0) }, baseTopic: config.mqtt.baseTopic, fleetID: config.fleet?.id, now: now
                )).serialized
            }

            func logEntry(_ entry: RecentLog.Entry, now: ContinuousClock.Instant) -> String {
                var members: [(String, JSONValue)] = [("seq", .int(Int(entry.sequence)))]
                if case .object(let fields)? = try? JSONValue.parse(entry.payload) { members += fields }
                members.append(("age_s", .int(WebStateView.seconds(now - entry.at))))
                return JSONValue.object(members).serialized
            }

            func ensureTicking() {
                guard !ticking, !followers.isEmpty else { return }
                ticking = true
                group.addTask {
                    try? await Task.sleep(for: Self.tick)
                    input.yield(.tick)
                }
            }

            for await next in inputs {
                switch next {
                case .event(.configApplied(_, let new)):
                    let old = config
                    config = new
                    context.recentLog.watch(BridgeTopics(settings: new.mqtt).bridgeLog)
                    context.passiveReadings.keep(only: Set(new.devices.map(\.name)))
                    errors.keep(only: Set(new.devices.map(\.name)))
                    if old?.web != new.web || (server == nil && new.web.enabled) {
                        stopServer()
                        retryToken += 1
                        guardian = WebGuard(settings: new.web, machineNames: machineNames)
                        if new.web.enabled { startServer(new.web) }
                    }
                case .event(.deviceEvent(let device, .error(let message))):
                    errors.record(device.name, message, at: .now)
                case .event(.rejected(let rejection)):
                    if let config, let device = Self.device(of: rejection.topic, in: config) {
                        errors.record(device, rejection.reason, at: .now)
                    }
                case .event(.stopping):
                    stopServer()
                    group.cancelAll()
                case .event:
                    break
                case .retry(let token):
                    guard token == retryToken, server == nil, let config, config.web.enabled else { break }
                    startServer(config.web)
                case .streamEnded(let id):
                    followers[id] = nil
                case .tick:
                    ticking = false
                    guard let config, !followers.isEmpty else { break }
                    let text = state(config)
                    let now = ContinuousClock.now
                    for (id, var follower) in followers {
                        if let text, text != follower.lastState {
                            follower.stream.send(event: "state", data: text)
                            follower.lastState = text
                        }
                        for entry in context.recentLog.entries(after: follower.lastLog) {
                            follower.stream.send(event: "log", data: logEntry(entry, now: now))
                            follower.lastLog = entry.sequence
                        }
                        followers[id] = follower
                    }
                    ensureTicking()
                case .request(let request, let responder):
                    pending.done()
                    guard let config, var guardian_ = guardian else {
                        responder.respond(.error(503, "the bridge is starting"))
                        break
                    }
                    let now = ContinuousClock.now
                    let access = guardian_.access(cookieHeader: request.header("cookie"), now: now)
                    let route = WebRoute.route(request, guard: guardian_, access: access)
                    let respond = { (response: HTTPResponse) in responder.respond(Self.secured(response)) }
                    switch route {
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
                        switch guardian_.login(password, from: request.peer, now: now) {
                        case .accepted(let session, let csrf):
                            var response = HTTPResponse.json(JSONValue.object([("csrf", .string(csrf))]).serialized)
                            if !session.isEmpty {
                                let secure = request.header("x-forwarded-proto")?.lowercased() == "https" ? "; Secure" : ""
                                response.headers.append(HTTPField("Set-Cookie", "\(WebGuard.cookieName)=\(session); "
                                    + "HttpOnly; SameSite=Strict; Path=/\(secure)"))
                            }
                            respond(response)
                        case .wrongPassword:
                            logger.warning("web page: wrong password from \(request.peer)")
                            respond(.error(401, "wrong password"))
                        case .throttled(let seconds):
                            var response = HTTPResponse.error(429, "too many attempts; wait \(seconds) s")
                            response.headers.append(HTTPField("Retry-After", String(seconds)))
                            respond(response)
                        }
                    case .logout:
                        guardian_.logout(cookieHeader: request.header("cookie"))
                        var response = HTTPResponse.json("{}")
                        response.headers.append(HTTPField("Set-Cookie", "\(WebGuard.cookieName)=; HttpOnly; "
                            + "SameSite=Strict; Path=/; Max-Age=0"))
                        respond(response)
                    case .state:
                        guard let text = state(config) else { respond(.error(503, "the bridge is stopping")); break }
                        respond(.json(text))
                    case .log:
                        let now = ContinuousClock.now
                        let entries = context.recentLog.entries().map { logEntry($0, now: now) }
                        respond(.json("{\"entries\":[" + entries.joined(separator: ",") + "]}"))
                    case .events:
                        let stream = responder.stream(headers: Self.securityHeaders)
                        let id = nextFollower
                        nextFollower += 1
                        stream.onClose { input.yield(.streamEnded(id)) }
                        var follower = Follower(stream: stream, lastState: nil, lastLog: 0)
                        if let text = state(config) {
                            stream.send(event: "state", data: text)
                            follower.lastState = text
                        }
                        follower.lastLog = context.recentLog.entries().last?.sequence ?? 0
                        followers[id] = follower
                        ensureTicking()
                    case .request(let verb, let body):
                        guard config.bridgeAPI else {
                            respond(.error(403, "the bridge API is off (bridge_api: false): the page can only show"))
                            break
                        }
                        let topics = BridgeTopics(base: config.mqtt.baseTopic, bridgeID: config.fleet?.id)
                        let topic = config.fleet == nil ? "\(config.mqtt.baseTopic)/bridge/request/\(verb)"
                            : topics.bridgeOwn("request") + "/" + verb
                        let timeout = verb == "scan" || verb == "inspect" ? Self.longRequestTimeout : Self.requestTimeout
                        logger.info("web page: \(verb) from \(request.peer)")
                        group.addTask {
                            let message = MQTTMessage(topic: topic, string: body, qos: .atLeastOnce, retain: false)
                            guard let answer = await context.ask(message, timeout: timeout) else {
                                return respond(.error(504, "the bridge did not answer"))
                            }
                            respond(.json(answer))
                        }
                    case .command(let device, let channel, let payload):
                        guard let target = config.devices.first(where: { $0.name == device }),
                              let writable = target.channels.first(where: { $0.name == channel }) else {
                            respond(.json(Self.commandError("no channel \(channel) on device \(device)"), status: 404))
                            break
                        }
                        let topic = BridgeTopics(settings: config.mqtt).set(target, writable)
                        group.addTask {
                            let message = MQTTMessage(topic: topic, string: payload, qos: .atLeastOnce, retain: false)
                            guard let answer = await context.ask(message, timeout: Self.requestTimeout) else {
                                return respond(.json(Self.commandError("no answer from the device in time")))
                            }
                            respond(.json(answer))
                        }
                    }
                    guardian = guardian_
                }
            }
            stopServer()
        }
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

/// Requests handed to the loop and not yet taken: counted on the server's thread, so a flood is refused there.
final class PendingCount: Sendable {
    private let count = Mutex(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func admit() -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func done() { count.withLock { $0 -= 1 } }
}
