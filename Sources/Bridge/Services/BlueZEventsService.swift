import BlueZ
import ServiceLifecycle

/// Feeds BlueZ's events (bluetoothd coming and going, adapters, devices) to the core until shutdown, then closes the
/// BlueZ client (after the core, which still disconnects devices through it).
struct BlueZEventsService: Service {
    let bluez: BlueZClient
    let core: BridgeCore
    let statusChanged: @Sendable () -> Void

    func run() async {
        for await event in bluez.events().cancelOnGracefulShutdown() {
            await core.handle(event)
            switch event {
            case .bluezVanished, .bluezAppeared: statusChanged()
            default: break
            }
        }
        await bluez.shutdown()
    }
}
