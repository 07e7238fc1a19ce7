import BridgeAdverts
import BridgeFeatureHost
import BridgeFeatures
import BridgeModel
import Codecs
import Config
import HTTPServer
import LoopHosting
import Logging
import MQTT
import Synchronization

/// The web page (docs/web.md): an HTTP server on the bridge's event loop (`HTTPServer`, never blocking it) whose
/// requests come here. It shows what MQTT shows, read from the same sources (the read model, the sessions' last
/// values, the adverts feature's readings, the bridge API's listing and `B/bridge/log`), and changes things only by
/// making the requests a broker client makes (`FeatureContext.ask`): `…/set` and `B/bridge/request/<verb>`, answers
/// and errors included.
///
/// One loop: core events, requests, the live tick and the server's retries arrive as inputs and go to `WebLoop`,
/// whose state is the loop's alone; what takes time (an answer awaited, a timer) it returns as `WebJob`s, run here as
/// child tasks whose results come back as inputs or answers. The tick exists only while a browser follows
/// `/api/events`: with no page open the feature sleeps.
package struct WebFeature: BridgeFeature {
    let version: String
    let started: ContinuousClock.Instant
    let broker: any BrokerStatus
    let adverts: AdvertCounts
    let host: any LoopHost
    let machineNames: [String]
    let logger: Logger

    package init(version: String, started: ContinuousClock.Instant, broker: any BrokerStatus, adverts: AdvertCounts,
                 host: any LoopHost, machineNames: [String], logger: Logger) {
        self.version = version
        self.started = started
        self.broker = broker
        self.adverts = adverts
        self.host = host
        self.machineNames = machineNames
        self.logger = logger
    }

    /// Requests waiting for the loop at most; beyond, 503 at once (a page never has more than a few).
    static let maxPending = 64

    enum Input: Sendable {
        case event(CoreEvent)
        case request(HTTPRequest, HTTPResponder)
        case tick
        case retry(UInt64)
        case streamEnded(Int)
    }

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        let (inputs, input) = AsyncStream.makeStream(of: Input.self)
        let pending = PendingCount(limit: Self.maxPending)
        let handler = HTTPHandlerFunction { request, responder in
            guard pending.admit() else { return responder.respond(.error(503, "busy; try again")) }
            input.yield(.request(request, responder))
        }
        var loop = WebLoop(feature: self, context: context, handler: handler,
                           streamEnded: { input.yield(.streamEnded($0)) })
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in events { input.yield(.event(event)) }
                input.finish()
            }
            for await next in inputs {
                let jobs: [WebJob]
                switch next {
                case .event(.stopping):
                    loop.stop()
                    group.cancelAll()
                    jobs = []
                case .event(let event): jobs = loop.handle(event)
                case .request(let request, let responder):
                    pending.done()
                    jobs = loop.serve(request, responder)
                case .tick: jobs = loop.tick()
                case .retry(let token): jobs = loop.retry(token)
                case .streamEnded(let id): jobs = loop.streamEnded(id)
                }
                for job in jobs {
                    group.addTask { await job.run(context, input) }
                }
            }
            loop.stop()
        }
    }
}

/// Work of the web loop that takes time, run on a child task of the feature.
enum WebJob: Sendable {
    /// `input` after `delay` (the live tick, a retry of the server).
    case after(Duration, WebFeature.Input)
    /// A request made as a broker client makes it; its answer, or `onTimeout`, goes to `responder` as JSON.
    case ask(MQTTMessage, timeout: Duration, HTTPResponder, onTimeout: HTTPResponse)

    func run(_ context: FeatureContext, _ input: AsyncStream<WebFeature.Input>.Continuation) async {
        switch self {
        case .after(let delay, let next):
            try? await Task.sleep(for: delay)
            input.yield(next)
        case .ask(let message, let timeout, let responder, let onTimeout):
            guard let answer = await context.ask(message, timeout: timeout) else {
                return responder.respond(WebLoop.secured(onTimeout))
            }
            responder.respond(WebLoop.secured(.json(answer)))
        }
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
