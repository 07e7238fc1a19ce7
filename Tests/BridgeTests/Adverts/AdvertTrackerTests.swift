import Adverts
import Bluetooth
import Codecs
import Config
import Testing
@testable import BridgeAdverts
@testable import BridgeModel

@Suite struct AdvertTrackerTests {
    typealias F = AdvertFixtures
    let t0 = AdvertFixtures.t0

    @Test func aSavedDeviceSaysOnlineAnnouncesAndPublishesItsReadings() {
        var tracker = F.tracker([F.passive()])
        let out = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        #expect(out.availability == [true])
        #expect(out.rssi == [-60])
        #expect(out.measurements == ["temperature": "21.5", "humidity": "50"])
        #expect(out.entities == [.measurement(name: "temperature", unit: "°C", kind: .number),
                                 .measurement(name: "humidity", unit: "%", kind: .number)])
        // Entities come before the first value of theirs.
        let firstDiscovery = out.firstIndex { if case .discovery = $0 { true } else { false } }!
        let firstValue = out.firstIndex { if case .measurement = $0 { true } else { false } }!
        #expect(firstDiscovery < firstValue)
    }

    @Test func theSameBroadcastFromTwoAdaptersIsPublishedOnce() {
        var tracker = F.tracker([F.passive()])
        _ = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        let second = tracker.heard(F.heard(F.reading(id: 1), adapter: "/org/bluez/hci1", rssi: -61), now: t0 + .milliseconds(5))
        #expect(second.isEmpty)
        // A packet id seen within the minute is a repeat, even after the byte window.
        #expect(tracker.heard(F.heard(F.reading(id: 1)), now: t0 + .seconds(10)).measurements.isEmpty)
        // A new packet with the same readings changes nothing; a new reading is published.
        #expect(tracker.heard(F.heard(F.reading(id: 2)), now: t0 + .seconds(20)).measurements.isEmpty)
        #expect(tracker.heard(F.heard(F.reading(id: 3, centidegrees: 2160)), now: t0 + .seconds(30)).measurements
            == ["temperature": "21.6"])
        // The id comes back after the window (ids wrap).
        #expect(tracker.heard(F.heard(F.reading(id: 1, centidegrees: 2170)), now: t0 + .seconds(90)).measurements
            == ["temperature": "21.7"])
    }

    @Test func eventsAreNeverDeduplicatedByValueButAreByBroadcast() {
        var tracker = F.tracker([F.passive()])
        let press1 = F.bthome("00013a01"), press2 = F.bthome("00023a01")
        let first = tracker.heard(F.heard(press1), now: t0)
        #expect(first.events == [#"button {"event_type":"press"}"#])
        #expect(first.entities == [.event(name: "button", types: ["press", "double_press", "triple_press", "long_press",
                                                                  "long_double_press", "long_triple_press", "hold_press",
                                                                  "hold_release"])])
        #expect(tracker.heard(F.heard(press1, adapter: "/org/bluez/hci1"), now: t0 + .milliseconds(1)).events.isEmpty)
        #expect(tracker.heard(F.heard(press1), now: t0 + .seconds(3)).events.isEmpty)
        let second = tracker.heard(F.heard(press2), now: t0 + .seconds(4))
        #expect(second.events == [#"button {"event_type":"press"}"#])
        #expect(second.entities.isEmpty)
        // A dimmer turn carries its steps.
        #expect(tracker.heard(F.heard(F.bthome("00033c0103")), now: t0 + .seconds(5)).events
            == [#"dimmer {"event_type":"rotate_left","steps":3}"#])
    }

    @Test func binaryReadingsAreOnOff() {
        var tracker = F.tracker([F.passive()])
        let out = tracker.heard(F.heard(F.bthome("0001110121011501")), now: t0)
        #expect(out.measurements == ["opening": "ON", "motion": "ON", "battery_binary": "ON"])
        #expect(out.entities.contains(.measurement(name: "opening", unit: nil, kind: .binary)))
    }

    @Test func encryptedBTHomeWithTheRightKeyTheWrongKeyAndNone() throws {
        let hexKey = "231d39c1d7cc1ab1aee224cd096db932"
        func sealed(_ counter: UInt32, _ objects: String = "02ca09") throws -> [UInt8] {
            try #require(BTHomeDecoder.encrypt(objects: try Hex.decode(objects), address: F.thermo, bindkey: F.key,
                                               counter: counter))
        }
        var right = F.tracker([F.passive(bindkey: hexKey)])
        #expect(right.heard(F.heard(try sealed(200)), now: t0).measurements == ["temperature": "25.06"])
        // A lower counter is a replay: dropped, and reported as a counter that went back.
        let replay = right.heard(F.heard(try sealed(150, "02cb09")), now: t0 + .seconds(3))
        #expect(replay.measurements.isEmpty && replay.errors.isEmpty && replay.wentBack == [150])
        #expect(right.heard(F.heard(try sealed(201, "02cb09")), now: t0 + .seconds(6)).measurements == ["temperature": "25.07"])

        var wrong = F.tracker([F.passive(bindkey: "00112233445566778899aabbccddeeff")])
        let failed = wrong.heard(F.heard(try sealed(1)), now: t0)
        #expect(failed.errors == ["decryption failed (wrong bindkey?)"])
        #expect(failed.measurements.isEmpty && failed.availability.isEmpty)

        var none = F.tracker([F.passive()])
        #expect(none.heard(F.heard(try sealed(1)), now: t0).errors == ["the broadcast is encrypted and no bindkey is set"])
        // A plaintext broadcast from a device with a key is refused (anyone could send it).
        var keyed = F.tracker([F.passive(bindkey: hexKey)])
        let plain = keyed.heard(F.heard(F.reading(id: 1)), now: t0)
        #expect(plain.measurements.isEmpty && plain.errors.count == 1)
    }

    @Test func theUndecryptableErrorIsRateLimitedPerDevice() throws {
        var tracker = F.tracker([F.passive(), F.passive("other", BluetoothAddress("A4:C1:38:00:00:02")!)])
        func sealed(_ counter: UInt32, _ address: BluetoothAddress = F.thermo) throws -> HeardBroadcast {
            F.heard(try #require(BTHomeDecoder.encrypt(objects: [0x01, 0x50], address: address, bindkey: F.key,
                                                       counter: counter)), from: address)
        }
        #expect(tracker.heard(try sealed(1), now: t0).errors.count == 1)
        var later = 0
        for minute in 1..<60 {
            later += tracker.heard(try sealed(UInt32(minute + 1)), now: t0 + .seconds(60 * minute)).errors.count
        }
        #expect(later == 0)
        // Another device has its own first error.
        #expect(tracker.heard(try sealed(1, BluetoothAddress("A4:C1:38:00:00:02")!), now: t0 + .seconds(10)).errors.count == 1)
        #expect(tracker.heard(try sealed(100), now: t0 + .seconds(3600)).errors.count == 1)
    }

    @Test func malformedAndForeignBroadcastsPublishNothing() {
        var tracker = F.tracker([F.passive()])
        #expect(tracker.heard(F.heard([0x20, 0x02, 0xca, 0x09]), now: t0).isEmpty)          // BTHome v1
        #expect(tracker.heard(F.heard([0x40]), now: t0 + .seconds(3)).isEmpty)              // no object
        #expect(tracker.heard(F.heard([0x01, 0x02], uuid: 0x181A), now: t0 + .seconds(6)).isEmpty)  // not BTHome
        #expect(tracker.nextDeadline == nil)
    }

    @Test func availabilityTimesOut() {
        var tracker = F.tracker([F.passive()], settings: F.settings(timeout: .seconds(900)))
        #expect(tracker.nextDeadline == nil)
        _ = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        #expect(tracker.nextDeadline == t0 + .seconds(900))
        #expect(tracker.expire(now: t0 + .seconds(899)).isEmpty)
        // A repeat of the same broadcast is still a sign of life.
        _ = tracker.heard(F.heard(F.reading(id: 1)), now: t0 + .seconds(1))
        #expect(tracker.nextDeadline == t0 + .seconds(901))
        #expect(tracker.expire(now: t0 + .seconds(901)).availability == [false])
        #expect(tracker.nextDeadline == nil)
        #expect(tracker.expire(now: t0 + .seconds(2000)).isEmpty)
        let back = tracker.heard(F.heard(F.reading(id: 9)), now: t0 + .seconds(2000))
        #expect(back.availability == [true])
        #expect(back.measurements.isEmpty)      // the readings did not change
    }

    @Test func rssiOnAStepOfFiveOrOnceAMinute() {
        var tracker = F.tracker([F.passive()])
        var id: UInt8 = 0
        func rssi(_ value: Int, at seconds: Int) -> [Int] {
            id += 1
            return tracker.heard(F.heard(F.reading(id: id), rssi: value), now: t0 + .seconds(seconds)).rssi
        }
        #expect(rssi(-60, at: 0) == [-60])
        #expect(rssi(-62, at: 3) == [])
        #expect(rssi(-65, at: 6) == [-65])
        #expect(rssi(-66, at: 9) == [])
        #expect(rssi(-65, at: 60) == [])          // unchanged since published
        #expect(rssi(-66, at: 67) == [-66])       // a minute since the last
    }

    @Test func autoDevicesAreBoundedByTheLimit() {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome], limit: 3))
        var added: [DeviceConfig] = []
        for n in 0..<10_000 {
            let address = BluetoothAddress(rawValue: 0xA4C1_3800_0000 + UInt64(n))
            added += tracker.heard(F.heard(F.reading(id: UInt8(n % 200)), from: address), now: t0 + .milliseconds(n))
                .added
        }
        #expect(added.map(\.name) == ["bthome-a4c138000000", "bthome-a4c138000001", "bthome-a4c138000002"])
        #expect(added.allSatisfy { $0.source.kind == .advert && $0.advert == .format(.bthome) && $0.channels.isEmpty })
        #expect(tracker.trackedCount == 3 && tracker.autoCount == 3)
    }

    @Test func onlyAutoFormatsOfUnsavedAddressesAreTracked() {
        var tracker = F.tracker([], settings: F.settings(auto: [.pvvx]))
        #expect(tracker.heard(F.heard(F.reading(id: 1)), now: t0).isEmpty)
        #expect(tracker.trackedCount == 0)
        var none = F.tracker([], settings: F.settings())
        #expect(none.heard(F.heard(F.reading(id: 1)), now: t0).isEmpty)
        // A configured device that only connects is not an unsaved broadcaster.
        var connected = AdvertTracker()
        _ = connected.configure(settings: F.settings(auto: [.bthome]),
                                devices: [DeviceConfig(name: "strap", address: F.thermo, channels: [])], fleet: false)
        #expect(connected.heard(F.heard(F.reading(id: 1)), now: t0).isEmpty)
        // Junk under the UUID is not a device.
        var junk = F.tracker([], settings: F.settings(auto: [.bthome]))
        #expect(junk.heard(F.heard([0x20, 0x01]), now: t0).isEmpty && junk.trackedCount == 0)
    }

    @Test func anAutoDeviceIsPublishedAtOnceAndKeptUntilTheConfigSettlesIt() {
        let settings = F.settings(auto: [.bthome])
        var tracker = F.tracker([], settings: settings)
        let first = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        let device = first.added[0]
        #expect(device.name == "bthome-a4c1381a2b3c")
        #expect(first.measurements == ["temperature": "21.5", "humidity": "50"])
        // An unrelated reload before the add lands keeps it; the add landing keeps its state.
        #expect(tracker.configure(settings: settings, devices: [], fleet: false).isEmpty)
        #expect(tracker.trackedCount == 1)
        _ = tracker.configure(settings: settings, devices: [device], fleet: false)
        #expect(tracker.heard(F.heard(F.reading(id: 2)), now: t0 + .seconds(3)).isEmpty)
        // Removed from the running config: forgotten (heard again, it is added again).
        _ = tracker.configure(settings: settings, devices: [], fleet: false)
        #expect(tracker.trackedCount == 0)
        #expect(tracker.heard(F.heard(F.reading(id: 3)), now: t0 + .seconds(6)).added.count == 1)
    }

    @Test func aRefusedAutoDeviceIsNotAskedForAgain() {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome]))
        #expect(tracker.heard(F.heard(F.reading(id: 1)), now: t0).added.count == 1)
        tracker.autoRefused(F.thermo)
        #expect(tracker.heard(F.heard(F.reading(id: 2)), now: t0 + .seconds(3)).isEmpty)
        #expect(tracker.trackedCount == 1)
    }

    @Test func anEncryptedAutoDeviceIsAddedToBeAdoptedWithItsKey() throws {
        var tracker = F.tracker([], settings: F.settings(auto: [.bthome]))
        let sealed = try #require(BTHomeDecoder.encrypt(objects: [0x01, 0x50], address: F.thermo, bindkey: F.key, counter: 1))
        let out = tracker.heard(F.heard(sealed), now: t0)
        #expect(out.added.count == 1 && out.measurements.isEmpty && out.errors.count == 1)
    }

    @Test func inAFleetOnlyTheOwnerSpeaks() {
        var tracker = F.tracker([F.passive()], fleet: true)
        #expect(tracker.heard(F.heard(F.reading(id: 1)), now: t0).isEmpty)
        let taken = tracker.ownership("thermo", owned: true)
        #expect(taken.entities.count == 2 && taken.availability == [true] && taken.rssi == [-60])
        #expect(taken.measurements == ["temperature": "21.5", "humidity": "50"])
        #expect(tracker.heard(F.heard(F.reading(id: 2, centidegrees: 2200)), now: t0 + .seconds(3)).measurements
            == ["temperature": "22"])
        #expect(tracker.ownership("thermo", owned: false).isEmpty)
        #expect(tracker.heard(F.heard(F.reading(id: 3, centidegrees: 2300)), now: t0 + .seconds(6)).isEmpty)
        // Held: nothing said until the hold ends, then everything.
        _ = tracker.ownership("thermo", owned: true)
        #expect(tracker.held("thermo", true).isEmpty)
        #expect(tracker.heard(F.heard(F.reading(id: 4, centidegrees: 2400)), now: t0 + .seconds(9)).isEmpty)
        #expect(tracker.held("thermo", false).measurements["temperature"] == "24")
        #expect(tracker.ownership("nobody", owned: true).isEmpty)
    }

    @Test func republishRepeatsWhatTheBrokerHolds() {
        var tracker = F.tracker([F.passive()])
        #expect(tracker.republish().isEmpty)
        _ = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        let again = tracker.republish()
        #expect(again.availability == [true] && again.rssi == [-60] && again.entities.isEmpty)
        #expect(again.measurements == ["temperature": "21.5", "humidity": "50"])
        #expect(tracker.announce().entities.count == 2 && tracker.announce().measurements.isEmpty)
    }

    @Test func aDeviceThatConnectsTooLeavesAvailabilityAndRSSIToItsSession() throws {
        var device = F.passive()
        device.channels = [try DiscoveryFixtures.channel("temperature", .int16)]
        var tracker = F.tracker([device])
        let out = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        #expect(out.availability.isEmpty && out.rssi.isEmpty)
        #expect(out.measurements == ["humidity": "50"])      // the channel of that name wins
    }

    @Test func aChangedDeviceStartsAfresh() {
        let settings = F.settings()
        var tracker = F.tracker([F.passive()], settings: settings)
        _ = tracker.heard(F.heard(F.reading(id: 1)), now: t0)
        _ = tracker.configure(settings: settings, devices: [F.passive("renamed")], fleet: false)
        let out = tracker.heard(F.heard(F.reading(id: 2)), now: t0 + .seconds(3))
        #expect(out.availability == [true] && out.measurements.count == 2)
        #expect(out.allSatisfy { action in
            if case .measurement(let device, _, _) = action { device.name == "renamed" } else { true }
        })
    }

    @Test func aBeaconIsHomeWhileHeard() throws {
        let beacon = F.passive("keys", format: .format(.ibeacon))
        var tracker = F.tracker([beacon], settings: F.settings(timeout: .seconds(60)))
        let ibeacon = try Hex.decode("0215" + "fda50693a4e24fb1afcfc6eb07647825" + "27115b12" + "c5")
        let heard = HeardBroadcast(address: F.thermo, adapter: "/org/bluez/hci0", rssi: -70, name: nil,
                                   broadcast: Broadcast(address: F.thermo, manufacturerData: [.init(company: 0x004C,
                                                                                                   bytes: ibeacon)]))
        let out = tracker.heard(heard, now: t0)
        #expect(out.measurements == ["presence": "home", "tx_power": "-59"])
        #expect(out.entities.contains(.presence))
        #expect(tracker.expire(now: t0 + .seconds(60)).measurements == ["presence": "not_home"])
        let back = tracker.heard(heard, now: t0 + .seconds(100))
        #expect(back.measurements == ["presence": "home"] && back.availability == [true])
    }

    /// A beacon without sensors sends TLM frames that read nothing; hearing them is still presence.
    @Test func anEddystoneTLMWithoutSensorsKeepsTheBeaconHome() throws {
        let beacon = F.passive("tag", format: .format(.eddystone))
        var tracker = F.tracker([beacon], settings: F.settings(timeout: .seconds(60)))
        let tlm = try Hex.decode("20000000800000000001000000ff")
        let heard = HeardBroadcast(address: F.thermo, adapter: "/org/bluez/hci0", rssi: -70, name: nil,
                                   broadcast: Broadcast(address: F.thermo, serviceData: [
                                       .init(uuid: BluetoothUUID(UInt16(0xFEAA)), bytes: tlm)]))
        let out = tracker.heard(heard, now: t0)
        #expect(out.measurements == ["presence": "home"] && out.availability == [true])
        #expect(tracker.heard(heard, now: t0 + .seconds(50)).measurements.isEmpty)
        #expect(tracker.expire(now: t0 + .seconds(100)).measurements.isEmpty, "heard 50 s ago: still home")
    }

    @Test func disabledHearsNothing() {
        var settings = F.settings(auto: [.bthome])
        settings.enabled = false
        var tracker = F.tracker([F.passive()], settings: settings)
        #expect(tracker.heard(F.heard(F.reading(id: 1)), now: t0).isEmpty)
    }
}

@Suite struct AdvertTrackerRepeatTests {
    typealias F = AdvertFixtures
    let t0 = AdvertFixtures.t0

    @Test func withoutAPacketIDTheBytesLastDecodedAreTheSameBroadcast() {
        var tracker = F.tracker([F.passive()])
        let press = F.bthome("3a01")
        #expect(tracker.heard(F.heard(press), now: t0).events.count == 1)
        // BlueZ reports the cached data again when the RSSI changes, long after the press.
        let echo = tracker.heard(F.heard(press, rssi: -80), now: t0 + .seconds(30))
        #expect(echo.events.isEmpty && echo.rssi == [-80])
        #expect(tracker.heard(F.heard(F.bthome("3a02")), now: t0 + .seconds(31)).events.count == 1)
        #expect(tracker.heard(F.heard(press), now: t0 + .seconds(32)).events.count == 1)
    }

    // MARK: Replays (issue 40)

    /// The audit's button: counters 10, 11, 2000–2005 pressed, then the captures 10, 2002, 2003, 11 and 2004 replayed.
    /// Before, replaying 10 (below 100, always believed) made every older capture fresh again: five forged presses.
    @Test func noReplayedPressIsEverPublished() throws {
        let hexKey = "231d39c1d7cc1ab1aee224cd096db932"
        func press(_ counter: UInt32) throws -> HeardBroadcast {
            // Packet id, then a button press; the trigger-based info byte, as a real button sends.
            F.heard(try #require(BTHomeDecoder.encrypt(objects: [0x00, UInt8(counter & 0xFF), 0x3A, 0x01],
                                                       address: F.thermo, bindkey: F.key, counter: counter,
                                                       info: 0x45)))
        }
        var tracker = F.tracker([F.passive(bindkey: hexKey)])
        var at = t0
        var presses = 0, saves = 0
        for counter: UInt32 in [10, 11, 2000, 2001, 2002, 2003, 2004, 2005] {
            at += .seconds(3)
            let out = tracker.heard(try press(counter), now: at)
            presses += out.events.count
            saves += out.counterSaves
        }
        #expect(presses == 8 && saves == 8)
        var reports: [UInt32] = []
        // The captures are replayed later than the packet ids' one-minute window, as the audit's were: only the
        // counters can tell them from new presses.
        at += .seconds(61)
        for counter: UInt32 in [10, 2002, 2003, 11, 2004, 2005] {
            at += .seconds(3)
            let out = tracker.heard(try press(counter), now: at)
            #expect(out.events.isEmpty, "replayed press \(counter) published")
            #expect(out.counterSaves == 0)
            reports += out.wentBack
        }
        // Reported once (the first replay), then at most once an hour.
        #expect(reports == [10])
        #expect(tracker.heard(try press(12), now: at + .seconds(3600)).wentBack == [12])

        // A restart: the marks saved come back, and the captures stay worthless.
        var restarted = AdvertTracker()
        restarted.restore(ReplayLedger(lines: tracker.ledger.lines))
        _ = restarted.configure(settings: F.settings(), devices: [F.passive(bindkey: hexKey)], fleet: false)
        for counter: UInt32 in [10, 11, 2000, 2005] {
            #expect(restarted.heard(try press(counter), now: at + .seconds(Int64(counter))).events.isEmpty)
        }
        #expect(restarted.heard(try press(2006), now: at + .seconds(4000)).events.count == 1)

        // Re-armed (a new battery): the next counter is believed whatever it is, and becomes the mark.
        #expect(restarted.rearm("thermo")?.counterSaves == 1)
        #expect(restarted.rearm("nobody") == nil)
        #expect(restarted.heard(try press(3), now: at + .seconds(4003)).events.count == 1)
        #expect(restarted.heard(try press(2), now: at + .seconds(4006)).events.isEmpty)
        // A reload keeps the marks of the devices still keyed, and drops the others'.
        _ = restarted.configure(settings: F.settings(), devices: [F.passive(bindkey: hexKey)], fleet: false)
        #expect(restarted.ledger.marks.count == 1)
        let dropped = restarted.configure(settings: F.settings(), devices: [F.passive()], fleet: false)
        #expect(restarted.ledger.marks.isEmpty && dropped.counterSaves == 1)
    }

    /// A keyed Xiaomi device ignores plaintext frames (anyone can send one with its address), unless the user says
    /// its firmware sends some (`allow_plaintext`).
    @Test func aKeyedXiaomiDeviceIgnoresPlaintextUnlessAllowed() throws {
        let address = BluetoothAddress("58:2D:34:3B:2E:BF")!
        let plaintext = try Hex.decode("5020aa01a3bf2e3b342d580d1004b40095020a10013b")
        let heard = F.heard(plaintext, from: address, uuid: XiaomiDecoder.uuid)
        var keyed = F.tracker([F.passive("lywsd", address, format: .format(.xiaomi),
                                         bindkey: "a3bfe9853dd85a620debe3620caaa351")])
        let refused = keyed.heard(heard, now: t0)
        #expect(refused.measurements.isEmpty && refused.availability.isEmpty)
        #expect(refused.errors == ["unencrypted broadcast from a device with a bindkey (ignored)"])
        var device = F.passive("lywsd", address, format: .format(.xiaomi), bindkey: "a3bfe9853dd85a620debe3620caaa351")
        device.allowPlaintext = true
        var mixed = F.tracker([device])
        #expect(mixed.heard(heard, now: t0).measurements["temperature"] == "18")
        var plain = F.tracker([F.passive("lywsd", address, format: .format(.xiaomi))])
        #expect(plain.heard(heard, now: t0).measurements["temperature"] == "18")
    }

    /// BTHome text objects (0x53) reached MQTT verbatim, ESC, NUL and newline included (issue 40): the reading is
    /// still published, its controls escaped.
    @Test func controlCharactersOfATextReadingAreEscaped() {
        var tracker = F.tracker([F.passive()])
        // "a", ESC "[2J", NUL, LF, DEL, U+0085 (C1, two UTF-8 bytes), "z".
        let text: [UInt8] = [0x61, 0x1B, 0x5B, 0x32, 0x4A, 0x00, 0x0A, 0x7F, 0xC2, 0x85, 0x7A]
        let out = tracker.heard(F.heard([0x40, 0x53, UInt8(text.count)] + text), now: t0)
        #expect(out.measurements == ["text": "a\\x1b[2J\\x00\\n\\x7f\\x85z"])
        let published = out.measurements["text"] ?? ""
        #expect(!published.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) })
    }
}
