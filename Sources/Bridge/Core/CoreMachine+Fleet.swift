import MQTT

/// The fleet's half of `CoreMachine` (docs/fleet.md): ownership as the fleet feature decides it, the holds while an
/// owner confirms it still owns a device, and the commands that wait for a hold.
///
/// Invariants:
/// - `fleet` changes only here and at `install` (joining or leaving a fleet);
/// - a device's ownership is announced once per change: at once when it has a session or is passive, else when its
///   session starts (`sessionStarted`);
/// - commands of a held device run in arrival order when the hold ends with the device still this bridge's, and are
///   dropped when another bridge took it (it received them too).
extension CoreMachine {
    mutating func handleFleet(_ input: Input, _ out: inout [Action]) {
        switch input {
        case .hold(let device, let held, let known):
            guard known else { break }
            if held {
                guard fleet.holding.insert(device).inserted else { break }
                out += [.holdValues(device: device), .announceHeld(device: device, true)]
            } else {
                guard fleet.holding.remove(device) != nil else { break }
                out += [.releaseValues(device: device, deliver: true), .announceHeld(device: device, false)]
                if let waiting = heldCommands.removeValue(forKey: device) { out.append(.replay(waiting)) }
            }
        case .ownership(let device, let owned, let running):
            let wasHeld = fleet.holding.remove(device) != nil
            if owned {
                // Owning it ends any hold: the values follow, the commands run.
                out.append(.releaseValues(device: device, deliver: true))
                if wasHeld, let waiting = heldCommands.removeValue(forKey: device) { out.append(.replay(waiting)) }
            } else {
                // Another bridge took the device: it ran these commands and publishes these notifications.
                heldCommands[device] = nil
                out.append(.releaseValues(device: device, deliver: false))
            }
            guard fleet.set(device, owned: owned) else { break }
            if running {
                unannounced.remove(device)
                out.append(.ownershipChanged(device: device, owned: owned))
                place(&out)      // an owned device takes a connection slot; one given up frees it
            } else if config.devices.contains(where: { $0.name == device && $0.isPassive }) {
                out.append(.announceOwnership(device: device))
            } else {
                // Its config is not applied yet: said when its session starts, once, as for a running device.
                unannounced.insert(device)
            }
        case .sessionStarted(let device):
            if unannounced.remove(device) != nil { out.append(.announceOwnership(device: device)) }
        default:
            break
        }
    }

    /// Whether a command for `device` waits for its hold to end. `accepted` false: it was refused (too many wait).
    mutating func holdCommand(_ message: MQTTMessage, device: String) -> (held: Bool, accepted: Bool) {
        guard fleet.isHolding(device) else { return (false, true) }
        guard heldCommands[device, default: []].count < Self.maxHeldCommands else { return (true, false) }
        heldCommands[device, default: []].append(message)
        return (true, true)
    }
}
