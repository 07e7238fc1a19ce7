/// What the orchestrator must do after `SessionMachine.handle(_:now:)`, in the order given.
public enum SessionAction: Sendable, Hashable {
    /// Start (or join) discovery filtered for this device; report `deviceFound` as soon as the device object exists,
    /// including when it exists already.
    case startDiscovery
    /// This session no longer needs discovery.
    case stopDiscovery
    /// Queue for the adapter's connect slot (`ConnectGate`); report `connectSlotGranted` with this generation.
    case requestConnectSlot(SessionGeneration)
    /// Give the slot back, or withdraw the request for it. Idempotent.
    case releaseConnectSlot(SessionGeneration)
    /// Call `Device1.Connect`; report `connectSucceeded` or `failure` (`connectTimeout` after `timeout`).
    case connect(SessionGeneration, timeout: Duration)
    /// Call `Device1.Pair`, then set `Trusted`; report `pairSucceeded` or `failure` (`authentication` when the
    /// peripheral or the agent refused).
    case pair(SessionGeneration, timeout: Duration)
    /// Call `Device1.Disconnect` (also cancels a pending `Connect`).
    case disconnect
    /// Wait for `ServicesResolved` and locate every configured characteristic; report `servicesResolved` or
    /// `failure` (`resolveTimeout` after `timeout`, `characteristicMissing`).
    case resolveServices(SessionGeneration, timeout: Duration)
    /// Subscribe every notify channel; report `subscribed` once all are, or `failure`.
    case subscribeChannels(SessionGeneration)
    /// Read every read-mode channel once and publish it.
    case readChannelsOnce
    case startPolling
    case stopPolling
    /// Publish `online`/`offline` to `B/D/availability` (emitted only when the value changes).
    case publishAvailability(Bool)
    /// Report `backoffElapsed` with this generation after the delay.
    case scheduleBackoff(Duration, SessionGeneration)
    case cancelBackoff
    case emitEvent(BridgeEvent)
    /// The link is up: run the commands that waited for it, in arrival order (`CommandScheduler`).
    case flushPendingCommands
    /// Call `Adapter1.RemoveDevice` for this device (flushes BlueZ's cached GATT tree).
    case removeDevice
    /// Fleet: ownership was given up and the link torn down; once the disconnect asked for before this is done,
    /// report `released`, so the release is published only after the device is free for the next owner.
    case confirmRelease
}
