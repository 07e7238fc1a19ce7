/// Identifies one attempt of a session. Actions that start asynchronous work carry it, and the orchestrator passes it
/// back with the result, so a result that arrives after the session moved on is recognised as stale and ignored.
public typealias SessionGeneration = UInt64

/// What the orchestrator tells a `SessionMachine`. Facts observed on the bus (adapter, bluetoothd, device object,
/// `Connected`) carry no generation: they are true whenever they arrive. Results of work the machine asked for do.
public enum SessionEvent: Sendable, Hashable {
    case start
    case stop
    /// The adapter exists; `powered` is its current `Powered` (sent at start-up and on every change).
    case adapterAvailable(powered: Bool)
    case adapterGone
    /// `org.bluez` has an owner again (the orchestrator then re-reports adapter and device).
    case bluezAvailable
    case bluezGone
    /// The device object exists in BlueZ (InterfacesAdded, or already present when discovery was requested).
    case deviceFound
    /// The device object was removed.
    case deviceGone
    case connectSlotGranted(SessionGeneration)
    /// `Device1.Connect` returned successfully (AlreadyConnected counts as success).
    case connectSucceeded(SessionGeneration)
    /// The device's `Paired` as BlueZ reports it (at lookup and on every change).
    case paired(Bool)
    /// `Device1.Pair` succeeded and the device is trusted.
    case pairSucceeded(SessionGeneration)
    /// `Connected` became true.
    case connected
    /// `Connected` became false.
    case disconnected
    /// Services are resolved and every configured characteristic was found.
    case servicesResolved(SessionGeneration)
    /// Every notify channel is subscribed.
    case subscribed(SessionGeneration)
    case failure(FailureKind, SessionGeneration)
    case backoffElapsed(SessionGeneration)
    /// Fleet (docs/fleet.md): whether this bridge owns the device, i.e. may connect it and speak for it. A lone bridge
    /// owns every device and never sends this.
    case ownership(Bool)
}
