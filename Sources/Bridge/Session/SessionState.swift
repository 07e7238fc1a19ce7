/// Where a device session is. Within one attempt the session moves
/// `waitingForSlot → connecting → resolvingServices → subscribing → online`; every failure leads to `backoff` (or to
/// `waitingForAdapter` when only an event can help).
public enum SessionState: Sendable, Hashable {
    /// Not started, or stopped.
    case stopped
    /// bluetoothd or the adapter is missing or powered off.
    case waitingForAdapter
    /// The device object is unknown: discovery runs until it appears. Holds no connect slot, so a device that never
    /// shows up delays no one.
    case discovering
    /// Queued for the adapter's single connect slot.
    case waitingForSlot
    /// Holding the connect slot, `Pair` in flight (a device with `pairing` that BlueZ does not list as paired).
    case pairing
    /// Holding the connect slot, `Connect` in flight.
    case connecting
    case resolvingServices
    case subscribing
    /// Connected and every notify channel subscribed: availability is `online`.
    case online
    /// Waiting for the backoff timer; then the given step.
    case backoff(RetryRule.Next)

    /// States in which the current generation has work in flight whose failure the session accepts.
    var acceptsFailures: Bool {
        switch self {
        case .discovering, .waitingForSlot, .pairing, .connecting, .resolvingServices, .subscribing, .online: true
        case .stopped, .waitingForAdapter, .backoff: false
        }
    }

    /// States in which a link to the device exists or is being made.
    var hasLink: Bool {
        switch self {
        case .pairing, .connecting, .resolvingServices, .subscribing, .online: true
        default: false
        }
    }
}
