import Testing
@testable import Bridge

@Suite struct PassiveSightingsTests {
    /// The reports told, in order: `(device, rssi)` → told or not.
    func told(_ sightings: inout PassiveSightings, _ reports: [(String, Int)]) -> [Bool] {
        reports.map { sightings.report($0.0, rssi: $0.1) }
    }

    /// An auto device is added after its first broadcast; BlueZ repeats the same RSSI without signalling it, yet the
    /// first report after the add must reach the fleet, or nobody claims the device.
    @Test func theFirstReportOfADeviceIsToldThenOnlyChanges() {
        var sightings = PassiveSightings()
        let result = told(&sightings, [("bthome-a4c1380b7202", -50), ("bthome-a4c1380b7202", -50),
                                       ("bthome-a4c1380b7202", -52), ("balcony", -52)])
        #expect(result == [true, false, true, true])
    }

    @Test func aRestartedOrLostDeviceIsToldItsNextReportAgain() {
        var sightings = PassiveSightings()
        var result = told(&sightings, [("balcony", -60), ("balcony", -60)])
        sightings.restart("balcony")                            // a reload gave it a new ownership machine
        result += told(&sightings, [("balcony", -60)])
        sightings.lost("balcony")                               // BlueZ removed its object: unseen was told
        result += told(&sightings, [("balcony", -60)])
        #expect(result == [true, false, true, true])
    }

    @Test func devicesLeavingTheConfigAreForgotten() {
        var sightings = PassiveSightings()
        var result = told(&sightings, [("balcony", -60), ("cellar", -70)])
        sightings.keep(["cellar"])
        result += told(&sightings, [("balcony", -60), ("cellar", -70)])
        #expect(result == [true, true, true, false])
    }
}
