import BridgeFeatureHost
import BridgeModel
import BridgeSession
import Codecs
import Durations
import Logging
import MQTT

/// `B/bridge/event` (device connected, disconnected, errors, retries) and `B/bridge/log` (every rejected command),
/// as JSON, and the same story in the journal. Reports quote outside text cut and escaped, and `B/bridge/log` is
/// rate-limited, so a flood of bad commands cannot flood the broker or the journal (docs/security.md).
package struct EventLogFeature: BridgeFeature {
    package init(logger: Logger) {
        self.logger = logger
    }

    let logger: Logger

    private enum Timer: Sendable { case summary, drops }

    /// Losses are logged at most once per period: the first at once, the rest of the period summed in one line.
    static let dropReportPeriod: Duration = .seconds(5)

    package func run(_ events: FeatureEvents, _ context: FeatureContext) async {
        var topics = BridgeTopics(base: "")
        var limiter = ReportRateLimiter()
        var connected = false
        /// Messages the MQTT client lost, by reason, not yet reported on `B/bridge/log`. Reported only while the
        /// broker is connected: a report published into a full offline buffer would evict yet another message.
        var unreportedDrops: [MQTTDropReport.Reason: Int] = [:]
        /// Losses not yet logged, by reason, and the running total of the newest report of each.
        var unloggedDrops: [MQTTDropReport.Reason: (count: Int, total: Int)] = [:]
        var dropWindowOpen = false
        /// The running total of each reason as last logged.
        var loggedTotals: [MQTTDropReport.Reason: Int] = [:]

        /// One line per reason for what was lost since the last line, and one `B/bridge/log` report per reason.
        func flushDrops() {
            for (reason, lost) in unloggedDrops.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                // QoS 0 while the broker is away is MQTT's contract for QoS 0 (RSSI, which is republished after the
                // reconnect): logged, not reported as an error.
                let level: Logger.Level = reason == .notConnected ? .info : .warning
                logger.log(level: level, "\(lost.count) MQTT message(s) lost: \(Self.explain(reason))",
                           metadata: ["total": "\(lost.total)"])
                if reason != .notConnected { unreportedDrops[reason, default: 0] += lost.count }
                loggedTotals[reason] = lost.total
            }
            unloggedDrops = [:]
            reportDrops()
        }

        func reportDrops() {
            guard connected else { return }
            for (reason, count) in unreportedDrops.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let message = "\(count) MQTT message\(count == 1 ? "" : "s") lost: \(Self.explain(reason))"
                let json = JSONValue.object([("level", .string("error")), ("message", .string(message)),
                                             ("dropped", .int(count)), ("reason", .string(reason.rawValue))])
                context.publish(topics.bridgeLog, json.serialized, qos: 1)
            }
            unreportedDrops = [:]
        }

        await runFeatureLoop(events, timer: Timer.self) { input in
            switch input {
            case .event(.brokerConnected):
                connected = true
                flushDrops()
            case .event(.brokerDisconnected):
                connected = false
            case .event(.messagesDropped(let report)):
                // A flood drops thousands of messages, each in its own report: one line per period, not per report
                // (the reports on `B/bridge/log` would otherwise be dropped in turn, feeding the flood).
                // Counted from the running totals: a consumer that fell behind misses reports, never totals.
                let logged = loggedTotals[report.reason] ?? (report.total - report.count)
                let newest = max(report.total, unloggedDrops[report.reason]?.total ?? 0)
                unloggedDrops[report.reason] = (newest - logged, newest)
                guard !dropWindowOpen else { break }
                flushDrops()
                dropWindowOpen = true
                return [(.now + Self.dropReportPeriod, .drops)]
            case .timer(.drops):
                dropWindowOpen = false
                guard !unloggedDrops.isEmpty else { break }
                flushDrops()
                dropWindowOpen = true
                return [(.now + Self.dropReportPeriod, .drops)]
            case .event(.configApplied(_, let config)):
                topics = BridgeTopics(base: config.mqtt.baseTopic)
            case .event(.deviceEvent(let device, let event)):
                context.publish(topics.bridgeEvent, Self.eventJSON(event, device: device.name, logger: logger), qos: 1)
            case .event(.rejected(let rejection)):
                switch limiter.admit(now: .now) {
                case .publish:
                    publishRejection(rejection, topics: topics, context: context)
                case .suppress(let first):
                    if first, let end = limiter.windowEnd { return [(end, .summary)] }
                }
            case .timer(.summary):
                guard let count = limiter.summary(now: .now) else { break }
                let message = "\(count) more rejected command\(count == 1 ? "" : "s") in the last second not reported one by one"
                logger.warning("\(message)")
                let json = JSONValue.object([("level", .string("error")), ("message", .string(message)),
                                             ("suppressed", .int(count))])
                context.publish(topics.bridgeLog, json.serialized, qos: 1)
            case .event:
                break
            }
            return []
        }
    }

    private func publishRejection(_ rejection: CommandRejection, topics: BridgeTopics, context: FeatureContext) {
        let report = Self.rejectionReport(rejection)
        logger.warning("command rejected: \(report.message)", metadata: ["topic": "\(report.topic)"])
        context.publish(topics.bridgeLog, report.json, qos: 1)
    }

    /// docs/mqtt.md's `{"level","message","topic"}` for a rejected command: outside text (reason, topic) escaped and cut;
    /// the payload, when the reason does not already quote it, appended cut to 64 bytes (docs/security.md).
    static func rejectionReport(_ rejection: CommandRejection) -> (message: String, topic: String, json: String) {
        var message = ReportText.escaped(rejection.reason, maxBytes: 512)
        if let payload = rejection.payload {
            message += " (payload \"\(ReportText.escaped(payload, maxBytes: 64))\")"
        }
        let topic = ReportText.escaped(rejection.topic, maxBytes: 256)
        let json = JSONValue.object([("level", .string("error")), ("message", .string(message)), ("topic", .string(topic))])
        return (message, topic, json.serialized)
    }

    static func explain(_ reason: MQTTDropReport.Reason) -> String {
        switch reason {
        case .bufferFull: "the offline buffer was full (oldest dropped first)"
        case .notConnected: "QoS 0 while the broker was unreachable"
        case .shutdown: "still unsent when the client shut down"
        case .oversizeReceived: "a received packet over the maximum packet size"
        case .inboxFull: "received while the bridge was too far behind"
        }
    }

    static func eventJSON(_ event: BridgeEvent, device: String, logger: Logger) -> String {
        var fields: [(String, JSONValue)]
        switch event {
        case .connected:
            fields = [("type", .string("connected"))]
            logger.info("connected", metadata: ["device": "\(device)"])
        case .disconnected(let reason):
            fields = [("type", .string("disconnected")), ("reason", .string(reason))]
            logger.notice("disconnected", metadata: ["device": "\(device)", "reason": "\(reason)"])
        case .error(let message):
            fields = [("type", .string("error")), ("message", .string(message))]
            logger.warning("\(message)", metadata: ["device": "\(device)"])
        case .reconnectAttempt(let attempt, let delay):
            let ms = Int(delay.inMilliseconds)
            fields = [("type", .string("reconnect_attempt")), ("attempt", .int(attempt)), ("delay_ms", .int(ms))]
            logger.info("reconnect attempt \(attempt) in \(ms) ms", metadata: ["device": "\(device)"])
        }
        fields.append(("device", .string(device)))
        return JSONValue.object(fields).serialized
    }
}
