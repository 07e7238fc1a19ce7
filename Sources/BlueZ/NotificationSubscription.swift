import Synchronization

/// An active notification subscription on one characteristic.
///
/// `values` ends when the subscription ends for any reason: `stop()`, the device disconnecting, the characteristic
/// disappearing, bluetoothd going away, or BlueZ closing the acquired socket. When `deliversToSink` is true, values
/// went to the `onValue` sink given to `subscribe` (on the D-Bus loop thread) and `values` only finishes.
public final class NotificationSubscription: Sendable {
    /// How values arrive: an `AcquireNotify` socket, or `PropertiesChanged` signals after `StartNotify`.
    public enum Delivery: String, Sendable, Equatable { case fd, signal }

    public let delivery: Delivery
    public let characteristicPath: String
    /// The MTU BlueZ returned with `AcquireNotify`, else the characteristic's MTU property if exported.
    public let mtu: Int?
    public let values: AsyncStream<[UInt8]>
    /// True with an `onValue` sink: values bypass `values`, which then only signals the end.
    public let deliversToSink: Bool

    private let onStop: @Sendable () async -> Void
    private let stopped = Atomic(false)

    init(delivery: Delivery, characteristicPath: String, mtu: Int?, values: AsyncStream<[UInt8]>,
         deliversToSink: Bool = false, onStop: @escaping @Sendable () async -> Void) {
        self.delivery = delivery
        self.characteristicPath = characteristicPath
        self.mtu = mtu
        self.values = values
        self.deliversToSink = deliversToSink
        self.onStop = onStop
    }

    /// Ends the subscription: closes the socket, or calls StopNotify (best effort; a gone device cannot refuse). Idempotent.
    public func stop() async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await onStop()
    }
}
