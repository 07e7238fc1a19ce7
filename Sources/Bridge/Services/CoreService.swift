import BridgeCoreLayer
import ServiceLifecycle

/// Runs the core (its sessions and features) until graceful shutdown, then stops the devices while the broker
/// connection is still up, so their `offline` reaches it.
struct CoreService: Service {
    let core: BridgeCore

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                try? await gracefulShutdown()
                await core.shutdown()
            }
            await core.run()
            group.cancelAll()
        }
    }
}
