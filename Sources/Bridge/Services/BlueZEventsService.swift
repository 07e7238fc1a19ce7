import BlueZ
import BridgeCoreLayer
import ServiceLifecycle

/// Feeds BlueZ's events (bluetoothd coming and going, adapters, devices) to the core until shutdown, then closes the
/// BlueZ client (after the core, which still disconnects devices through it).
///
/// The stream is subscribed when the service is made, before any service runs: the core reads BlueZ's objects at
/// start and then relies on the events for every later change, so an event emitted between that read and a
/// subscription taken only once this service's task got a thread (a device BlueZ found for discovery the core had
/// just started) would be lost for good; BlueZ may never send it again (an RSSI that does not change).
struct BlueZEventsService: Service {
    let bluez: BlueZClient
    let core: BridgeCore
    let statusChanged: @Sendable () -> Void
    private let events: AsyncStream<BlueZEvent>

    init(bluez: BlueZClient, core: BridgeCore, statusChanged: @escaping @Sendable () -> Void) {
        self.bluez = bluez
        self.core = core
        self.statusChanged = statusChanged
        events = bluez.events()
    }

    func run() async {
        for await event in events.cancelOnGracefulShutdown() {
            core.handle(event)
            switch event {
            case .bluezVanished, .bluezAppeared: statusChanged()
            default: break
            }
        }
        await bluez.shutdown()
    }
}
