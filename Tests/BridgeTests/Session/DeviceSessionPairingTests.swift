import BlueZ
import Bluetooth
import Codecs
import Config
import Logging
import Testing
@testable import BridgePairing
@testable import BridgeSession

/// docs/pairing.md through a whole `DeviceSession` against `FakeGATT` (whose device BlueZ does not list as paired).
@Suite struct DeviceSessionPairingTests {
    let base = DeviceSessionTests()

    @Test func aDeviceWithPairingIsPairedBeforeItConnects() async throws {
        var config = try base.device()
        config.pairing = PairingConfig(mode: .justWorks)
        let session = sessionFor(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { base.recorder.availability == [false, true] }
            #expect(base.gatt.state.withLock { ($0.pairs, $0.connects) } == (1, 1))
            // Bonded links subscribe with StartNotify (BlueZ before 5.84 wedges a failed AcquireNotify).
            #expect(base.gatt.state.withLock { $0.preferAcquire } == [false])
            await session.stop()
        }
    }

    @Test func aDeviceWithoutPairingIsNeverPaired() async throws {
        let session = sessionFor(try base.device())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { base.recorder.availability == [false, true] }
            #expect(base.gatt.state.withLock { $0.pairs } == 0)
            // Not bonded: the fast AcquireNotify path.
            #expect(base.gatt.state.withLock { $0.preferAcquire } == [true])
            await session.stop()
        }
    }

    /// bluetoothd takes the pairing's capability from the caller's agent when `Pair` arrives: a session started
    /// before the agent is registered (with `KeyboardOnly`, for a passkey) waits for it instead of pairing as
    /// just-works and failing.
    @Test func pairingWaitsForTheAgentWithTheRightCapability() async throws {
        var config = try base.device()
        config.pairing = PairingConfig(mode: .passkey, passkey: Secret("123456"))
        let readiness = AgentReadiness()
        let session = base.gatt.session(config, recorder: base.recorder, agentReadiness: readiness)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("waiting for the agent") { readiness.waiting == 1 }
            // Registered, but unable to type a passkey: the wait goes on (`set` resumes satisfied waiters at once).
            readiness.set(capability: "NoInputNoOutput")
            #expect(readiness.waiting == 1)
            #expect(base.gatt.state.withLock { $0.pairs } == 0)
            readiness.set(capability: "KeyboardOnly")
            try await eventually("online") { base.recorder.availability == [false, true] }
            #expect(base.gatt.state.withLock { ($0.pairs, $0.connects) } == (1, 1))
            await session.stop()
        }
    }

    @Test func readinessWaitEndsAtItsLimitOrWhenCancelled() async {
        let readiness = AgentReadiness()
        #expect(await readiness.wait(needsKeyboard: false, within: .milliseconds(20)) == false)
        readiness.set(capability: "NoInputNoOutput")
        #expect(await readiness.wait(needsKeyboard: false, within: .milliseconds(20)) == true)
        #expect(await readiness.wait(needsKeyboard: true, within: .milliseconds(20)) == false)
        let waiting = Task { await readiness.wait(needsKeyboard: true, within: .seconds(60)) }
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    /// A device bonded while it used a resolvable private address: BlueZ keeps the object named after that address,
    /// with `Address` now the identity address the config holds. The session pairs and connects that object.
    @Test func theObjectBlueZReportsForTheAddressIsTheOneUsed() async throws {
        let rpaPath = FakeGATT.adapterPath + "/dev_4A_11_22_33_44_55"
        base.gatt.state.withLock { $0.reportedPath = rpaPath }
        var config = try base.device()
        config.pairing = PairingConfig(mode: .justWorks)
        let session = sessionFor(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("online") { base.recorder.availability == [false, true] }
            #expect(base.gatt.state.withLock { $0.calledPaths } == [rpaPath, rpaPath])
            await session.stop()
        }
    }

    /// BlueZ 5.66 answers an unpaired read of an encrypted characteristic with ATT error 0x0e.
    @Test func aReadRefusedForLackOfEncryptionSaysToSetPairing() async throws {
        base.gatt.state.withLock { $0.readError = .failed(reason: "Operation failed with ATT error: 0x0e") }
        let session = sessionFor(try base.device())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("an error event naming pairing") { errors().contains { $0.contains("set pairing: just_works") } }
            await session.stop()
        }
    }

    /// BlueZ 5.66 after an unpaired AcquireNotify of an encrypted characteristic: every later subscription is refused
    /// with NotPermitted "Notify acquired".
    @Test func aSubscriptionRefusedAsAcquiredSaysToSetPairing() async throws {
        base.gatt.state.withLock { $0.subscribeError = .notifyAcquired }
        let session = sessionFor(try base.device())
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("an error event naming pairing") {
                errors().contains { $0.contains("acquired") && $0.contains("set pairing: just_works") }
            }
            await session.stop()
        }
    }

    @Test func aDeviceThatPairsGetsNoHint() async throws {
        base.gatt.state.withLock { $0.readError = .failed(reason: "Operation failed with ATT error: 0x0e") }
        var config = try base.device()
        config.pairing = PairingConfig(mode: .justWorks)
        let session = sessionFor(config)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await session.run() }
            try await eventually("reads tried") { base.gatt.state.withLock { $0.reads } >= 2 }
            await session.stop()
            #expect(!errors().contains { $0.contains("pairing") })
        }
    }

    private func errors() -> [String] {
        base.recorder.reports.withLock {
            $0.compactMap { if case .event(.error(let message)) = $0 { message } else { nil } }
        }
    }

    private func sessionFor(_ config: DeviceConfig) -> DeviceSession {
        base.session(config)
    }
}

/// What the daemon's agent is made of, for a config.
@Suite struct AgentRegistrationTests {
    private func device(_ name: String, _ address: String, _ pairing: PairingConfig) throws -> DeviceConfig {
        DeviceConfig(name: name, address: BluetoothAddress(address)!, channels: [
            ChannelConfig(name: "c", characteristic: BluetoothUUID("2a19")!, codec: try Codec(.hex)),
        ], pairing: pairing)
    }

    @Test func onlyDevicesThatPairAreInThePolicy() throws {
        let config = BridgeConfig(devices: [
            try device("plain", "C0:FF:EE:00:00:01", .none),
            try device("bulb", "C0:FF:EE:00:00:02", PairingConfig(mode: .justWorks)),
            try device("lock", "C0:FF:EE:00:00:03", PairingConfig(mode: .passkey, passkey: Secret("000042"))),
        ])
        let registration = AgentRegistration(config)
        #expect(registration.policy.devices == [
            BluetoothAddress("C0:FF:EE:00:00:02")!: .justWorks, BluetoothAddress("C0:FF:EE:00:00:03")!: .passkey(42),
        ])
        #expect(registration.capability == "KeyboardOnly")
        #expect(registration.wanted && !registration.makeDefault)
    }

    /// The Bluetooth proxy's passkeys join the policy while the proxy is on; a device of the config keeps its own.
    @Test func theProxysPasskeysAreAnsweredWhileItIsOn() throws {
        var config = BridgeConfig(devices: [
            try device("lock", "C0:FF:EE:00:00:03", PairingConfig(mode: .passkey, passkey: Secret("000042"))),
        ])
        let file = SecretFile(path: "/etc/gattbridge/secrets/x.passkey", mode: 0o600)
        config.esphomeProxy.passkeys = [
            BluetoothAddress("C0:FF:EE:00:00:03")!: ProxyPasskey(passkey: Secret("123456"), file: file),
            BluetoothAddress("C0:FF:EE:00:00:04")!: ProxyPasskey(passkey: Secret("654321"), file: file),
        ]
        #expect(AgentRegistration(config).policy.devices.count == 1)
        config.esphomeProxy.enabled = true
        #expect(AgentRegistration(config).policy.devices == [
            BluetoothAddress("C0:FF:EE:00:00:03")!: .passkey(42), BluetoothAddress("C0:FF:EE:00:00:04")!: .passkey(654_321),
        ])
    }

    @Test func noPairingDeviceMeansNoAgentUnlessDefaultIsAsked() throws {
        var config = BridgeConfig(devices: [try device("plain", "C0:FF:EE:00:00:01", .none)])
        #expect(!AgentRegistration(config).wanted)
        config.bluetooth.defaultAgent = true
        #expect(AgentRegistration(config).wanted)
        #expect(AgentRegistration(config).capability == "NoInputNoOutput")
    }
}
