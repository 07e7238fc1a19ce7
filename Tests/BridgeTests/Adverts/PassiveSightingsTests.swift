import Testing
@testable import BridgeAdverts

@Suite struct PassiveSightingsTests {
    typealias Tell = PassiveSightings.Tell
    let start = ContinuousClock.now

    /// The reports told, in order: `(device, adapter, rssi, seconds after start)`.
    func told(_ sightings: inout PassiveSightings, _ reports: [(String, String, Int, Int)]) -> [Tell?] {
        reports.map { sightings.report($0.0, adapter: $0.1, rssi: $0.2, now: start + .seconds($0.3)) }
    }

    /// An auto device is added after its first broadcast; BlueZ repeats the same RSSI without signalling it, yet the
    /// first report after the add must reach the fleet, or nobody claims the device.
    @Test func theFirstReportOfADeviceIsToldThenOnlyChanges() {
        var sightings = PassiveSightings()
        let result = told(&sightings, [("auto", "hci0", -50, 0), ("auto", "hci0", -50, 1), ("auto", "hci0", -52, 2),
                                       ("balcony", "hci0", -52, 2)])
        #expect(result == [.rssi(-50), nil, .rssi(-52), .rssi(-52)])
    }

    /// Two adapters of one bridge: the near one's report stands while it is current; the far one's reports in
    /// between are not told (they would swing the fleet's view and restart a handover's wait).
    @Test func theStrongestCurrentAdapterIsTold() {
        var sightings = PassiveSightings()
        var result = told(&sightings, [("balcony", "hci0", -50, 0), ("balcony", "hci1", -80, 1),
                                       ("balcony", "hci0", -50, 2), ("balcony", "hci1", -79, 3),
                                       ("balcony", "hci0", -55, 4)])
        #expect(result == [.rssi(-50), nil, nil, nil, .rssi(-55)])
        // hci0 stops hearing it: once its last report is older than the window, hci1's is what this bridge hears.
        let late = 4 + Int(PassiveSightings.window.components.seconds) + 1
        result = told(&sightings, [("balcony", "hci1", -79, late)])
        #expect(result == [.rssi(-79)])
    }

    @Test func aLostObjectLeavesTheOtherAdaptersOrUnseen() {
        var sightings = PassiveSightings()
        _ = told(&sightings, [("balcony", "hci0", -50, 0), ("balcony", "hci1", -70, 0)])
        #expect(sightings.lost("balcony", adapter: "hci0", now: start + .seconds(1)) == .rssi(-70))
        #expect(sightings.lost("balcony", adapter: "hci1", now: start + .seconds(2)) == .unseen)
        // Heard again: told, whatever the value.
        #expect(told(&sightings, [("balcony", "hci1", -70, 3)]) == [.rssi(-70)])
    }

    @Test func aRestartedDeviceIsToldItsNextReportAgain() {
        var sightings = PassiveSightings()
        _ = told(&sightings, [("balcony", "hci0", -60, 0)])
        sightings.restart("balcony")                            // a reload gave it a new ownership machine
        #expect(told(&sightings, [("balcony", "hci0", -60, 1)]) == [.rssi(-60)])
    }

    @Test func devicesLeavingTheConfigAreForgotten() {
        var sightings = PassiveSightings()
        _ = told(&sightings, [("balcony", "hci0", -60, 0), ("cellar", "hci0", -70, 0)])
        sightings.keep(["cellar"])
        #expect(told(&sightings, [("balcony", "hci0", -60, 1), ("cellar", "hci0", -70, 1)]) == [.rssi(-60), nil])
    }
}
