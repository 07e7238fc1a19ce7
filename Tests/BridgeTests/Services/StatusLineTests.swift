import Testing
@testable import Bridge

@Suite struct StatusLineTests {
    @Test func brokerAndDevices() {
        let line = StatusLine(mqttConnected: true, bluezAvailable: true, devicesOnline: 2, devices: 3)
        #expect(line.text == "mqtt connected; 2/3 devices online")
    }

    @Test func bluetoothdGoneAndBrokerDown() {
        let line = StatusLine(mqttConnected: false, bluezAvailable: false, devicesOnline: 0, devices: 1)
        #expect(line.text == "mqtt disconnected; bluetoothd unavailable; 0/1 devices online")
    }

    @Test func failedReloadStaysVisible() {
        let line = StatusLine(mqttConnected: true, bluezAvailable: true, devicesOnline: 1, devices: 1,
                              reloadFailure: "/etc/gattbridge/config.yaml:3:1: unknown key \"x\"")
        #expect(line.text == "mqtt connected; 1/1 devices online; reload failed, old config kept: "
                + "/etc/gattbridge/config.yaml:3:1: unknown key \"x\"")
    }

    /// A fleet member can only have its own devices online; counting the others would read as an outage.
    @Test func aFleetMemberCountsTheDevicesItOwns() {
        let line = StatusLine(mqttConnected: true, bluezAvailable: true, devicesOnline: 1, devices: 3, owned: 2)
        #expect(line.text == "mqtt connected; 1/2 owned devices online (3 saved)")
    }
}
