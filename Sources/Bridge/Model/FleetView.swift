/// Fleet (docs/fleet.md): which devices this bridge owns and which it holds while its ownership is confirmed. The
/// one copy is `CoreMachine.fleet`; the core publishes it with every routing table (`CommandRouter.Routes`), and
/// readers on other threads (the router, the sessions' RSSI reports, the STATUS line) read it from there. A lone
/// bridge owns every device.
package struct FleetView: Sendable, Equatable {
    package private(set) var isFleet: Bool
    /// Meaningful in a fleet only.
    private(set) var owned: Set<String> = []
    /// Devices whose values and commands wait (`OwnershipAction.hold`); each also has a session.
    package var holding: Set<String> = []

    package init(fleet: Bool) {
        isFleet = fleet
    }

    package func owns(_ device: String) -> Bool { !isFleet || owned.contains(device) }

    package func isHolding(_ device: String) -> Bool { holding.contains(device) }

    /// True when this changed the ownership.
    package mutating func set(_ device: String, owned value: Bool) -> Bool {
        value ? owned.insert(device).inserted : owned.remove(device) != nil
    }

    /// A reload joined or left a fleet: joining gives every device up until the fleet says otherwise, leaving takes
    /// them all. True when it changed.
    package mutating func setFleet(_ fleet: Bool) -> Bool {
        guard fleet != isFleet else { return false }
        self = FleetView(fleet: fleet)
        return true
    }
}
