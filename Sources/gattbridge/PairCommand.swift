import ArgumentParser
import BlueZ
import Bluetooth
import Config
import DBus
import Logging

struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair and bond with a device (just works, or with a passkey), mark it trusted, print its identity address.",
        discussion: """
            Exit status: 0 paired (or already paired), 75 pairing failed or was rejected (a wrong passkey), 69 the \
            device was not found. The address printed is the identity address BlueZ learnt while bonding: use it in \
            the config for devices that advertise with changing (resolvable private) addresses.
            """
    )

    @OptionGroup var bluetooth: BluetoothOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    @Option(help: ArgumentHelp("The device's six-digit passkey (visible to other users in the process list; prefer --passkey-file).",
                               valueName: "digits"))
    var passkey: String?

    @Option(help: ArgumentHelp("A file holding the six-digit passkey.", valueName: "file"))
    var passkeyFile: String?

    @Option(help: "Seconds to find the device and to pair (each).")
    var timeout: Double = 30

    func validate() throws {
        _ = try secondsOption("--timeout", timeout)
        if passkey != nil && passkeyFile != nil {
            throw ValidationError("--passkey and --passkey-file cannot be used together")
        }
        if let passkey, PairingConfig.parsePasskey(passkey) == nil {
            throw ValidationError("--passkey must be six digits")
        }
    }

    func run() async throws {
        bluetooth.bootstrapLogging()
        let logger = Logger(label: "gattbridge.pair")
        let entry = try passkeyEntry()
        let address = self.address.address
        let timeout = Seconds.duration(timeout) ?? .seconds(30)
        let session = try await BlueZSession.open(bluetooth, logger: logger)
        do throws(CLIFailure) {
            let identity = try await Interruption.run { () async throws(CLIFailure) -> DeviceInfo in
                try await Self.pair(address, entry: entry, timeout: timeout, session: session, logger: logger)
            }.value
            await session.close()
            Terminal.out("paired \(address)\n")
            let type = identity.addressType.map { " (\($0))" } ?? ""
            Terminal.out("identity address: \(identity.address)\(type)\n")
            Terminal.out("bonded: \(identity.bonded ? "yes" : "no"), trusted: \(identity.trusted ? "yes" : "no")\n")
        } catch {
            await session.close()
            throw error
        }
    }

    /// The agent's answer for this device: the passkey from the option or file, else just works.
    private func passkeyEntry() throws(CLIFailure) -> AgentPolicy.Entry {
        if let passkey, let number = PairingConfig.parsePasskey(passkey) { return .passkey(number) }
        guard let passkeyFile else { return .justWorks }
        switch PairingConfig.readPasskey(file: passkeyFile) {
        case .failure(let problem):
            throw CLIFailure(ExitStatus.configError, problem.description)
        case .success(let text):
            guard let number = PairingConfig.parsePasskey(text) else {
                throw CLIFailure(ExitStatus.configError, "passkey file \"\(passkeyFile)\" must hold six digits")
            }
            return .passkey(number)
        }
    }

    /// Registers an agent of this connection for the one device (bluetoothd sends a `Pair` caller's requests to the
    /// caller's agent, default or not), pairs, and leaves the device as it found it: disconnected unless it was
    /// connected before. Returns the device as BlueZ describes it after bonding (its identity address).
    private static func pair(_ address: BluetoothAddress, entry: AgentPolicy.Entry, timeout: Duration,
                             session: BlueZSession, logger: Logger) async throws(CLIFailure) -> DeviceInfo {
        let client = session.client
        let agent = PairingAgent(path: PairingAgent.defaultPath + "/cli", policy: AgentPolicy(devices: [address: entry]),
                                 logger: logger, bluez: client)
        await agent.export(on: client.connection)
        var registered = true
        do throws(BlueZError) {
            try await client.registerAgent(path: agent.path, capability: agent.policy.capability, makeDefault: false)
        } catch {
            // Pairing may still work through the default agent (just works); if it does not, Pair says so.
            logger.warning("cannot register the pairing agent: \(ExitStatus.describe(error))")
            registered = false
        }
        let result: Result<DeviceInfo, CLIFailure>
        do throws(CLIFailure) {
            result = .success(try await pairFound(address, timeout: timeout, session: session, logger: logger))
        } catch {
            result = .failure(error)
        }
        // Its own task: after Ctrl-C the agent must still be unregistered.
        if registered { await Task { try? await client.unregisterAgent(path: agent.path) }.value }
        return try result.get()
    }

    private static func pairFound(_ address: BluetoothAddress, timeout: Duration, session: BlueZSession,
                                  logger: Logger) async throws(CLIFailure) -> DeviceInfo {
        let client = session.client
        let device = try await session.find(address, timeout: timeout)
        let wasConnected = device.connected
        do throws(CLIFailure) {
            let info = try await pairAndDescribe(device, address: address, timeout: timeout, client: client, logger: logger)
            if !wasConnected { await Task { _ = try? await client.disconnect(device: device.path) }.value }
            return info
        } catch {
            if !wasConnected { await Task { _ = try? await client.disconnect(device: device.path) }.value }
            throw error
        }
    }

    private static func pairAndDescribe(_ device: DeviceInfo, address: BluetoothAddress, timeout: Duration,
                                        client: BlueZClient, logger: Logger) async throws(CLIFailure) -> DeviceInfo {
        if !device.paired {
            logger.info("pairing", metadata: ["device": "\(address)"])
            do throws(BlueZError) {
                try await client.pair(device: device.path, timeout: timeout)
            } catch {
                throw CLIFailure(pairExitCode(error), "pair \(address): \(ExitStatus.describe(error))")
            }
        } else {
            do throws(BlueZError) {
                try await client.setTrusted(device: device.path)
            } catch {
                throw CLIFailure(pairExitCode(error), "pair \(address): marking it trusted: \(ExitStatus.describe(error))")
            }
        }
        // Read afresh: the reply to Pair can overtake the PropertiesChanged (Address, Bonded) it caused.
        do {
            let properties = try await client.connection.getAllProperties(
                destination: "org.bluez", path: device.path, interface: "org.bluez.Device1", timeout: .seconds(10))
            return DeviceInfo(path: device.path, properties: properties) ?? device
        } catch {
            return await client.device(path: device.path) ?? device
        }
    }

    /// docs/pairing.md: 69 only when the device is not there, 75 for every failure or refusal of the pairing itself.
    private static func pairExitCode(_ error: BlueZError) -> Int32 {
        switch error {
        case .doesNotExist, .unknownObject, .deviceNotFound, .bluezUnavailable, .adapterNotFound, .serviceUnknown:
            ExitStatus.unavailable
        case .cancelled:
            ExitStatus.interrupted
        default:
            ExitStatus.temporaryFailure
        }
    }
}

struct UnpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpair",
        abstract: "Remove a device's bond (and everything BlueZ stored about it).",
        discussion: "Exit status: 0 removed, 69 BlueZ does not know the device."
    )

    @OptionGroup var bluetooth: BluetoothOptions

    @Argument(help: "Device address, AA:BB:CC:DD:EE:FF.", transform: AddressArgument.parse)
    var address: AddressArgument

    func run() async throws {
        bluetooth.bootstrapLogging()
        let logger = Logger(label: "gattbridge.unpair")
        let address = self.address.address
        let session = try await BlueZSession.open(bluetooth, logger: logger)
        do throws(CLIFailure) {
            guard let device = await session.client.device(address: address, adapter: session.adapter.path) else {
                throw CLIFailure(ExitStatus.unavailable, "device \(address) is not known to BlueZ on \(session.adapter.name)")
            }
            do throws(BlueZError) {
                try await session.client.removeDevice(device.path)
            } catch {
                throw CLIFailure(error, context: "unpair \(address)")
            }
            await session.close()
            Terminal.out("unpaired \(address)\n")
        } catch {
            await session.close()
            throw error
        }
    }
}
