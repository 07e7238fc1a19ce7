import Adverts
import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeAdverts

/// The bounds of the passive half (issue 40, docs/security.md): what one radio can make the bridge keep and publish.
@Suite struct AdvertBoundsTests {
    typealias F = AdvertFixtures
    let t0 = F.t0

    static func address(_ i: Int) -> BluetoothAddress { BluetoothAddress(rawValue: 0xA4C1_3800_0000 + UInt64(i)) }

    /// 36 objects of distinct names: 28 binary sensors and 8 sensors.
    static let wide: [UInt8] = {
        var objects: [UInt8] = [0x40, 0x01, 0x50, 0x09, 0x05, 0x02, 0xCA, 0x09, 0x03, 0x88, 0x13, 0x0D, 0x10, 0x00,
                                0x0E, 0x20, 0x00, 0x12, 0x90, 0x01, 0x06, 0x10, 0x27]
        for id: UInt8 in [0x0F, 0x10, 0x11] + Array(0x15...0x2D) { objects += [id, 0x01] }
        return objects
    }()

    @Test func aDeviceHasAtMost32ReadingsReportedOnce() {
        var tracker = F.tracker([F.passive()])
        let first = tracker.heard(F.heard(Self.wide), now: t0)
        #expect(first.measurements.count == AdvertTracker.maxEntitiesPerDevice)
        #expect(first.entities.count == AdvertTracker.maxEntitiesPerDevice)
        #expect(first.dropped.count == 1)
        var again = Self.wide
        again[2] = 0x51        // another battery value: a new broadcast
        let second = tracker.heard(F.heard(again), now: t0 + .seconds(3))
        #expect(second.measurements == ["battery": "81"] && second.dropped.isEmpty && second.entities.isEmpty)
    }

    /// 464 numbered temperatures fit in a 31-byte advertisement's worth of objects (the audit); four are kept.
    @Test func numberedRepeatsOfOneObjectStopAtFour() {
        var tracker = F.tracker([F.passive()])
        let packet: [UInt8] = [0x40] + (0..<10).flatMap { i -> [UInt8] in [0x02, UInt8(i), 0x09] }
        let out = tracker.heard(F.heard(packet), now: t0)
        #expect(out.measurements.keys.sorted() == ["temperature_1", "temperature_2", "temperature_3", "temperature_4"])
        #expect(out.dropped.count == 1)
        // Not a numbered repeat: a name that ends in digits of its own.
        #expect(!AdvertTracker.repeatBeyondLimit("pm2_5", among: ["pm2_5", "temperature_1"]))
        #expect(AdvertTracker.repeatBeyondLimit("button_5", among: ["button_1", "button_5"]))
    }

    @Test func newEntitiesAreRateLimitedBridgeWide() {
        let devices = (1...4).map { F.passive("d\($0)", Self.address($0)) }
        var tracker = F.tracker(devices)
        var announced = 0
        for i in 1...4 { announced += tracker.heard(F.heard(Self.wide, from: Self.address(i)), now: t0).entities.count }
        #expect(announced == AdvertTracker.entityBurst)
        // A second later, twenty more; the readings left out come with the next broadcasts that carry them.
        var more = 0
        for i in 1...4 {
            var again = Self.wide
            again[2] = 0x51
            more += tracker.heard(F.heard(again, from: Self.address(i)), now: t0 + .seconds(1)).entities.count
        }
        #expect(more == 20)
    }

    @Test func theAutoDevicesShareATotal() {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome], limit: 100))
        var at = t0
        var entities = 0, reports = 0
        for i in 1...40 {
            at += .seconds(3)
            let out = tracker.heard(F.heard(Self.wide, from: Self.address(i)), now: at)
            entities += out.entities.count
            reports += out.dropped.count
        }
        #expect(entities == AdvertTracker.maxAutoEntities)
        // Each device is told once, whichever bound it met first (its own 32, or the total); every drop is counted.
        #expect(reports == 40)
        #expect(tracker.droppedTotal == 40 * 36 - entities)
    }

    /// 100 random addresses in a tenth of a second filled every slot (the audit): now five get in at once, then one
    /// a second, and a full table is said once an hour, naming the limit.
    @Test func autoDevicesAreAdmittedAtABoundedRateAndAFullTableIsReported() {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome], limit: 8))
        var added = 0
        for i in 1...100 {
            added += tracker.heard(F.heard(F.reading(id: 1), from: Self.address(i)),
                                   now: t0 + .milliseconds(i)).added.count
        }
        #expect(added == AdvertTracker.autoBurst)
        #expect(tracker.refusedTotal == 95)       // counted for the bridge API's health
        var full: [Int] = []
        for i in 101...120 {
            let out = tracker.heard(F.heard(F.reading(id: 1), from: Self.address(i)), now: t0 + .seconds(i))
            added += out.added.count
            full += out.full
        }
        #expect(added == 8 && full == [8])
        let later = tracker.heard(F.heard(F.reading(id: 1), from: Self.address(200)), now: t0 + .seconds(4000))
        #expect(later.full == [8] && later.added.isEmpty)
    }

    /// Expiry only marked auto devices offline, and their slots stayed taken for good (the audit).
    @Test func aSilentAutoDeviceGivesItsSlotBack() {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome], limit: 1, timeout: .seconds(60)))
        let first = tracker.heard(F.heard(F.reading(id: 1), from: Self.address(1)), now: t0)
        let device = try! #require(first.added.first)
        _ = tracker.configure(settings: F.settings(auto: [.bthome], limit: 1, timeout: .seconds(60)),
                              devices: [device], fleet: false)
        #expect(tracker.heard(F.heard(F.reading(id: 1), from: Self.address(2)), now: t0 + .seconds(30)).added.isEmpty)
        #expect(tracker.nextDeadline == t0 + .seconds(60))
        #expect(tracker.expire(now: t0 + .seconds(59)).isEmpty)
        let expired = tracker.expire(now: t0 + .seconds(60))
        #expect(expired.removed == [device.name])
        #expect(tracker.autoCount == 0)
        #expect(tracker.heard(F.heard(F.reading(id: 1), from: Self.address(2)), now: t0 + .seconds(61)).added.count == 1)
    }

    @Test func anAutoDeviceThatNeverDecodesLeavesToo() throws {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome], limit: 1, timeout: .seconds(60)))
        let sealed = try #require(BTHomeDecoder.encrypt(objects: [0x01, 0x50], address: Self.address(1),
                                                        bindkey: F.key, counter: 1))
        #expect(tracker.heard(F.heard(sealed, from: Self.address(1)), now: t0).added.count == 1)
        #expect(tracker.nextDeadline == t0 + .seconds(60))
        _ = tracker.expire(now: t0 + .seconds(60))
        #expect(tracker.autoCount == 0)
    }
}

extension [AdvertAction] {
    var dropped: [String] { compactMap { if case .readingsDropped(_, let reason) = $0 { reason } else { nil } } }
    var full: [Int] { compactMap { if case .autoTableFull(_, let limit) = $0 { limit } else { nil } } }
    var removed: [String] { compactMap { if case .removeAutoDevice(let device) = $0 { device.name } else { nil } } }
}
