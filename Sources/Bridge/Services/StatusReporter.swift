import BlueZ
import BridgeCoreLayer
import ServiceLifecycle
import Systemd

/// Keeps systemd's STATUS= current. Every change of broker, bluetoothd or device state calls `refresh()`; only a
/// changed line is sent, so a chatty device does not flood the notify socket.
actor StatusReporter {
    private let notifier: SystemdNotifier
    private let core: BridgeCore
    private let mqtt: MQTTLink
    private let bluez: BlueZClient
    private var reloadFailure: String?
    private var last: String?

    init(notifier: SystemdNotifier, core: BridgeCore, mqtt: MQTTLink, bluez: BlueZClient) {
        self.notifier = notifier
        self.core = core
        self.mqtt = mqtt
        self.bluez = bluez
    }

    func refresh() async {
        let snapshot = core.snapshot()
        let line = StatusLine(mqttConnected: mqtt.client.isConnected, bluezAvailable: await bluez.isAvailable,
                              devicesOnline: snapshot.devicesOnline, devices: snapshot.devices, owned: snapshot.owned,
                              reloadFailure: reloadFailure).text
        guard line != last else { return }
        last = line
        notifier.status(line)
    }

    /// Refreshes on every trigger until graceful shutdown.
    func run(triggers: AsyncStream<Void>) async {
        for await _ in triggers.cancelOnGracefulShutdown() { await refresh() }
    }

    /// Shown until the next successful reload.
    func reloadFailed(_ reason: String) async {
        reloadFailure = reason
        await refresh()
    }

    func reloadSucceeded() async {
        reloadFailure = nil
        await refresh()
    }
}
