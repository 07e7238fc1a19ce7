import BridgeFeatureHost
import BridgeModel
import BridgeSession
import MQTT
import Synchronization

/// Takes every broker message on the thread that received it: commands straight to their device's session inbox
/// through the `CommandTable` the core published last, everything else to the features. No turn of the core on the
/// way; only a command for a held device (docs/fleet.md) goes to the core, which keeps it until the hold ends.
package final class CommandRouter: Sendable {
    package struct Routes: Sendable {
        package init(table: CommandTable, targets: [String: DeviceSession], fleet: FleetView) {
            self.table = table
            self.targets = targets
            self.fleet = fleet
        }

        let table: CommandTable
        /// The running sessions, by device name.
        let targets: [String: DeviceSession]
        /// Who owns which device, and which are held (`CoreMachine.fleet` as of this table).
        let fleet: FleetView
    }

    private let routes: Mutex<Routes>
    /// Retained command topics already reported, so a retained command is reported once, not at every reconnect.
    private let reportedRetained = Mutex<Set<String>>([])
    private let host: FeatureHost
    /// A command for a held device, to the core.
    private let held: @Sendable (_ device: String, MQTTMessage) -> Void

    package init(routes: Routes, host: FeatureHost, held: @escaping @Sendable (_ device: String, MQTTMessage) -> Void) {
        self.routes = Mutex(routes)
        self.host = host
        self.held = held
    }

    /// The core publishes a new table after every change of its config, its sessions or the fleet's view.
    package func publish(_ new: Routes) {
        routes.withLock { $0 = new }
    }

    /// The running session of `device`, as of the last table.
    package func session(_ device: String) -> DeviceSession? { routes.withLock { $0.targets[device] } }

    /// The fleet's view as of the last table, for readers outside the core's loop.
    package var fleet: FleetView { routes.withLock { $0.fleet } }

    /// Also how the core replays a command it held, once the hold has ended.
    package func route(_ message: MQTTMessage) {
        let current = routes.withLock { $0 }
        switch current.table.resolve(message, owns: current.fleet.owns) {
        case .notACommand:
            _ = host.route(message)
        case .retained:
            let first = reportedRetained.withLock { reported in
                reported.count < 1024 && reported.insert(message.topic).inserted
            }
            if first {
                reject(message, "retained command ignored (commands must not be published with the retain flag)",
                       table: current.table)
            }
        case .rejected(let reason, let payload):
            reject(message, reason, payload: payload, table: current.table)
        case .notOwned:
            break
        case .route(let device, let request):
            guard let session = current.targets[device] else {
                return reject(message, "unknown device \(device)", table: current.table)
            }
            // Run once the hold ends if the device is still ours; dropped if another bridge took it meanwhile.
            if current.fleet.isHolding(device) { return held(device, message) }
            session.send(.command(request))
        }
    }

    package func reject(_ message: MQTTMessage, _ reason: String, payload: Bool = false, table: CommandTable? = nil) {
        let table = table ?? routes.withLock { $0.table }
        host.emit(.rejected(table.rejection(message, reason, payload: payload)))
    }
}
