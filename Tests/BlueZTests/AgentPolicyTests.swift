import Bluetooth
import DBus
import Logging
import Testing
@testable import BlueZ

@Suite struct AgentPolicyTests {
    static let lock = BluetoothAddress("C0:FF:EE:00:00:05")!
    static let bulb = BluetoothAddress("C0:FF:EE:00:00:06")!
    static let stranger = BluetoothAddress("C0:FF:EE:00:00:07")!
    let policy = AgentPolicy(devices: [lock: .passkey(12345), bulb: .justWorks])

    @Test func savedDevicesGetTheirAnswers() {
        #expect(policy.answer("RequestPasskey", device: Self.lock) == .passkey(12345))
        #expect(policy.answer("RequestConfirmation", device: Self.lock) == .accept)
        #expect(policy.answer("RequestAuthorization", device: Self.bulb) == .accept)
        #expect(policy.answer("AuthorizeService", device: Self.bulb) == .accept)
    }

    @Test func everythingElseIsRejected() {
        for member in ["RequestPasskey", "RequestConfirmation", "RequestAuthorization", "AuthorizeService"] {
            guard case .reject = policy.answer(member, device: Self.stranger) else {
                Issue.record("\(member) for a stranger was not rejected")
                continue
            }
            guard case .reject = policy.answer(member, device: nil) else {
                Issue.record("\(member) without a device was not rejected")
                continue
            }
        }
        // A just-works device has no passkey to give.
        guard case .reject = policy.answer("RequestPasskey", device: Self.bulb) else {
            Issue.record("RequestPasskey for a just_works device was answered")
            return
        }
        for member in ["RequestPinCode", "DisplayPasskey", "DisplayPinCode", "Frobnicate"] {
            guard case .reject = policy.answer(member, device: Self.lock) else {
                Issue.record("\(member) was not rejected")
                continue
            }
        }
    }

    @Test func releaseAndCancelAreAcknowledged() {
        #expect(policy.answer("Release", device: nil) == .accept)
        #expect(policy.answer("Cancel", device: nil) == .accept)
    }

    @Test func capabilityFollowsTheDevices() {
        #expect(policy.capability == "KeyboardOnly")
        #expect(AgentPolicy(devices: [Self.bulb: .justWorks]).capability == "NoInputNoOutput")
        #expect(AgentPolicy().capability == "NoInputNoOutput")
    }

    @Test func deviceAddressComesFromTheObjectPath() {
        #expect(AgentPolicy.address(ofDevicePath: "/org/bluez/hci1/dev_C0_FF_EE_00_00_05") == Self.lock)
        #expect(AgentPolicy.address(ofDevicePath: "/org/bluez/hci1") == nil)
        #expect(AgentPolicy.address(ofDevicePath: "/org/bluez/hci1/dev_C0_FF") == nil)
    }

    @Test func theExportedObjectRepliesOnTheWire() {
        let agent = PairingAgent(policy: policy, logger: Logger(label: "test"), trustedCaller: { ":1.7" })
        func call(_ member: String, _ device: BluetoothAddress, from sender: String? = ":1.7") -> DBusReply {
            agent.reply(to: DBusMessage(kind: .methodCall, path: agent.path, interface: "org.bluez.Agent1", member: member,
                                        sender: sender,
                                        body: [.objectPath(ObjectPath.device(adapter: "/org/bluez/hci0", address: device))]))
        }
        // Any other process on the bus: refused, whatever it asks.
        for sender in [":1.8", nil] {
            guard case .error(let refused) = call("RequestPasskey", Self.lock, from: sender) else {
                Issue.record("RequestPasskey from \(sender ?? "nobody") was answered")
                return
            }
            #expect(refused.name == "org.bluez.Error.Rejected")
        }
        guard case .values(let values) = call("RequestPasskey", Self.lock) else {
            Issue.record("RequestPasskey was not answered")
            return
        }
        #expect(values == [.uint32(12345)])
        guard case .values(let empty) = call("RequestConfirmation", Self.bulb) else {
            Issue.record("RequestConfirmation was not answered")
            return
        }
        #expect(empty == [])
        guard case .error(let error) = call("RequestPasskey", Self.stranger) else {
            Issue.record("a stranger's RequestPasskey was answered")
            return
        }
        #expect(error.name == "org.bluez.Error.Rejected")

        // A reload swaps the policy: the removed device is refused from then on.
        agent.policy = AgentPolicy(devices: [Self.bulb: .justWorks])
        guard case .error = call("RequestPasskey", Self.lock) else {
            Issue.record("a removed device's RequestPasskey was answered")
            return
        }
    }

    @Test func securityFailuresSuggestPairing() {
        #expect(BlueZError.failed(reason: "Operation failed with ATT error: 0x05").suggestsPairing)
        #expect(BlueZError.failed(reason: "Operation failed with ATT error: 0x0e").suggestsPairing)
        #expect(BlueZError.failed(reason: "Operation failed with ATT error: 0x0f").suggestsPairing)
        #expect(BlueZError.notAuthorized.suggestsPairing)
        #expect(BlueZError.notPaired.suggestsPairing)
        #expect(!BlueZError.notPermitted.suggestsPairing)
        #expect(BlueZError.other(name: "org.bluez.Error.NotPermitted", message: "Insufficient encryption").suggestsPairing)
        #expect(!BlueZError.failed(reason: "Operation failed with ATT error: 0x80").suggestsPairing)
        #expect(!BlueZError.failed(reason: "le-connection-abort-by-local").suggestsPairing)
        #expect(!BlueZError.notConnected.suggestsPairing)
    }

    @Test func notifyAcquiredIsToldApart() {
        #expect(BlueZError(DBusError(name: "org.bluez.Error.NotPermitted", message: "Notify acquired")) == .notifyAcquired)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.NotPermitted", message: "Not paired")) == .notPaired)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.NotPermitted", message: "Write not permitted")) == .notPermitted)
        #expect(!BlueZError.notifyAcquired.suggestsPairing)
        #expect(BlueZClient.fallsBackToStartNotify(.notifyAcquired))
    }

    /// The one-off commands name `pair` with the device's address; other failures get no advice.
    @Test func commandsAdviseRunningPair() {
        let advice = BlueZError.failed(reason: "Operation failed with ATT error: 0x0e").pairingAdvice(address: Self.lock)
        #expect(advice?.hasSuffix("run gattbridge pair C0:FF:EE:00:00:05 first") == true)
        #expect(BlueZError.notPaired.pairingAdvice(address: Self.lock) != nil)
        #expect(BlueZError.notConnected.pairingAdvice(address: Self.lock) == nil)
    }

    @Test func deviceInfoCarriesBondState() {
        let info = DeviceInfo(path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_05", properties: [
            "Address": .string("C0:FF:EE:00:00:05"), "Paired": .bool(true), "Bonded": .bool(true), "Trusted": .bool(true)])
        #expect(info?.paired == true && info?.bonded == true && info?.trusted == true)
        let bare = DeviceInfo(path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_05", properties: ["Address": .string("C0:FF:EE:00:00:05")])
        #expect(bare?.bonded == false)
    }
}
