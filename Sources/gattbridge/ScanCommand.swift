import ArgumentParser
import BlueZ
import Bluetooth
import BridgeTools
import Durations
import Logging

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Discover nearby Bluetooth LE devices.",
        discussion: """
            On a terminal the table refreshes as devices appear, strongest signal first. Otherwise the table (or \
            with --json one JSON array) is printed once at the end. Ctrl-C ends the scan early. MEASUREMENTS \
            ("measurements" in JSON) is what a device's broadcast says, decoded as `adverts decode` would.
            """
    )

    @OptionGroup var bluetooth: BluetoothOptions

    @Option(help: "Seconds to scan.")
    var duration: Double = 10

    @Option(name: .customLong("service"), help: ArgumentHelp("Only devices advertising this service (repeatable).",
                                                            valueName: "uuid"))
    var services: [String] = []

    @Flag(help: "Print one JSON array at the end.")
    var json = false

    func validate() throws {
        _ = try secondsOption("--duration", duration)
        for service in services where BluetoothUUID(service) == nil {
            throw ValidationError("--service \(service) is not a UUID")
        }
    }

    func run() async throws {
        bluetooth.bootstrapLogging()
        let logger = Logger(label: "gattbridge.scan")
        let options = bluetooth
        let uuids = services.compactMap(BluetoothUUID.init)
        let duration = try secondsOption("--duration", self.duration)
        let live = !json && Terminal.stdoutIsTerminal
        let session = try await BlueZSession.open(options, logger: logger)
        let results: ScanResults
        do throws(CLIFailure) {
            results = try await Interruption.run { () async throws(CLIFailure) -> ScanResults in
                try await Self.scan(session, uuids: uuids, duration: duration, live: live)
            }.value
        } catch {
            await session.close()
            throw error
        }
        await session.close()
        if json {
            Terminal.out(results.json.serialized + "\n")
        } else if !live {
            Terminal.out(results.tableLines.joined(separator: "\n") + "\n")
        }
    }

    private enum Input: Sendable {
        case event(BlueZEvent)
        case redraw
        case end
    }

    private static func scan(_ session: BlueZSession, uuids: [BluetoothUUID], duration: Duration,
                             live: Bool) async throws(CLIFailure) -> ScanResults {
        let client = session.client
        let adapter = session.adapter
        // Subscribed before discovery starts, so no device found early is missed.
        let events = client.events()
        var results = ScanResults(adapterPath: adapter.path, services: uuids)
        for device in await client.devices(adapter: adapter.path) { results.seed(device) }

        do {
            try await client.startDiscovery(adapter: adapter.path,
                                            filter: DiscoveryFilter(transport: .le, uuids: uuids, duplicateData: true))
        } catch {
            throw CLIFailure(error, context: "scan on \(adapter.name)")
        }
        if live {
            Terminal.err("Scanning on \(adapter.name) for \(duration.secondsDescription) s (Ctrl-C to stop)…\n")
        }

        let (inputs, input) = AsyncStream<Input>.makeStream()
        let forwarder = Task {
            for await event in events { input.yield(.event(event)) }
        }
        let timer = Task {
            try? await Task.sleep(for: duration)
            input.yield(.end)
        }
        var painter = LiveTable(enabled: live)
        var redrawTask: Task<Void, Never>?
        painter.draw(results.tableLines)

        loop: for await item in inputs {
            switch item {
            case .event(let event):
                guard results.apply(event) else { continue }
                        guard live, redrawTask == nil else { continue }
                let wait = painter.delayBeforeNextDraw()
                if wait <= .zero {
                    painter.draw(results.tableLines)
                } else {
                    redrawTask = Task {
                        try? await Task.sleep(for: wait)
                        input.yield(.redraw)
                    }
                }
            case .redraw:
                redrawTask = nil
                painter.draw(results.tableLines)
            case .end:
                break loop
            }
        }
        forwarder.cancel()
        timer.cancel()
        redrawTask?.cancel()
        input.finish()
        painter.draw(results.tableLines)

        // In its own task: when Ctrl-C cancelled the scan, discovery must still be stopped.
        await Task {
            do {
                try await client.stopDiscovery(adapter: adapter.path)
            } catch {
                session.logger.warning("StopDiscovery failed", metadata: ["error": "\(error)"])
            }
        }.value
        return results
    }
}

/// Redraws the scan table in place on a terminal, at most five times a second.
struct LiveTable {
    let enabled: Bool
    private var linesDrawn = 0
    private var lastDraw: ContinuousClock.Instant?
    private var lastLines: [String] = []
    static let minimumInterval = Duration.milliseconds(200)

    init(enabled: Bool) {
        self.enabled = enabled
    }

    func delayBeforeNextDraw() -> Duration {
        guard let lastDraw else { return .zero }
        return Self.minimumInterval - (ContinuousClock.now - lastDraw)
    }

    mutating func draw(_ lines: [String]) {
        guard enabled, lines != lastLines || lastDraw == nil else { return }
        // Cursor up over the previous table, clear to the end of the screen, draw the new one.
        var text = linesDrawn > 0 ? "\u{1B}[\(linesDrawn)A\r\u{1B}[J" : ""
        text += lines.joined(separator: "\n") + "\n"
        Terminal.out(text)
        linesDrawn = lines.count
        lastLines = lines
        lastDraw = .now
    }
}
