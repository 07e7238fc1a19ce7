import Bluetooth

/// What our `org.bluez.Agent1` answers, as data: which devices may pair and how (docs/pairing.md). Pure, so every answer
/// is unit-tested without a bus; `PairingAgent` only translates D-Bus calls into `answer(_:device:)` and back.
///
/// Only devices listed here get anything but `Rejected`: with one bluetoothd serving other programs (or, as default
/// agent, every pairing of the machine), agreeing to whatever asks would let any nearby device bond.
public struct AgentPolicy: Sendable, Equatable {
    public enum Entry: Sendable, Equatable {
        case justWorks
        case passkey(UInt32)
    }

    public enum Answer: Sendable, Equatable {
        /// `RequestPasskey`'s reply.
        case passkey(UInt32)
        /// An empty reply: confirmed, authorized, or (for `Release`/`Cancel`) acknowledged.
        case accept
        /// `org.bluez.Error.Rejected` with this message.
        case reject(String)
    }

    public static let agentInterface = "org.bluez.Agent1"
    public static let rejectedName = "org.bluez.Error.Rejected"

    public var devices: [BluetoothAddress: Entry]

    public init(devices: [BluetoothAddress: Entry] = [:]) {
        self.devices = devices
    }

    /// `KeyboardOnly` when a passkey is to be typed in: with both sides keyboard-only, SMP has each side enter the
    /// same passkey, so the one printed on the peripheral works. Otherwise `NoInputNoOutput` (just works).
    public var capability: String {
        devices.values.contains { if case .passkey = $0 { true } else { false } } ? "KeyboardOnly" : "NoInputNoOutput"
    }

    /// The answer to `member` of `org.bluez.Agent1` about `device` (nil when the call named none or an unparsable one).
    public func answer(_ member: String, device: BluetoothAddress?) -> Answer {
        switch member {
        case "Release", "Cancel":
            // Notifications (the agent was unregistered; a request was withdrawn): acknowledged, never refused.
            return .accept
        case "RequestPasskey", "RequestConfirmation", "RequestAuthorization", "AuthorizeService":
            guard let device, let entry = devices[device] else {
                return .reject("\(device?.description ?? "this device") is not a saved device that pairs")
            }
            guard member == "RequestPasskey" else { return .accept }
            guard case .passkey(let passkey) = entry else {
                return .reject("\(device) is configured for just_works pairing, not a passkey")
            }
            return .passkey(passkey)
        default:
            // RequestPinCode (BR/EDR legacy), DisplayPasskey, DisplayPinCode: nothing we were configured to agree to.
            return .reject("\(member) is not supported by gattbridge's agent")
        }
    }

    /// The device an agent call is about: its first argument is the device's object path, `…/dev_AA_BB_CC_DD_EE_FF`.
    public static func address(ofDevicePath path: String) -> BluetoothAddress? {
        guard let component = path.split(separator: "/").last, component.hasPrefix("dev_") else { return nil }
        return BluetoothAddress(String(component.dropFirst(4)).replacing("_", with: ":"))
    }
}
