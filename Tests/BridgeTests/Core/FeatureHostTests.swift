import Adverts
import Bluetooth
import Testing
@testable import Bridge

/// The host's fan-out: broadcasts (about one a second per sensor) reach only the features that want them.
@Suite struct FeatureHostTests {
    @Test func broadcastsReachOnlyTheFeaturesThatWantThem() async {
        let host = FeatureHost(link: RecordingLink())
        let (plain, _) = host.attach()
        let (adverts, _) = host.attach(broadcasts: true)
        let heard = HeardBroadcast(address: BluetoothAddress("A4:C1:38:00:00:01")!, adapter: "/org/bluez/hci0",
                                   rssi: -60, name: nil, broadcast: Broadcast())
        host.emit(.broadcast(heard))
        host.emit(.brokerConnected)
        host.finish()
        var seenByPlain: [String] = [], seenByAdverts: [String] = []
        for await event in plain { seenByPlain.append(Self.name(event)) }
        for await event in adverts { seenByAdverts.append(Self.name(event)) }
        #expect(seenByPlain == ["brokerConnected"])
        #expect(seenByAdverts == ["broadcast", "brokerConnected"])
    }

    static func name(_ event: CoreEvent) -> String {
        switch event {
        case .broadcast: "broadcast"
        case .brokerConnected: "brokerConnected"
        default: "other"
        }
    }
}
