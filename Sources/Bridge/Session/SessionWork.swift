import BlueZ
import Bluetooth
import BridgeChannels
import BridgeModel
import Codecs
import Config
import Logging

/// The work a session hands to child tasks: each job one BlueZ operation (or a timer) whose result comes back to
/// the session's inbox as an input. Built from values the loop passes in, never from the loop's state, so a job
/// cannot read state that changed after it was made; the loop (`SessionLoop`) decides which job runs and when.
struct SessionWork: Sendable {
    let config: DeviceConfig
    let env: SessionEnvironment
    let inbox: AsyncStream<SessionInput>.Continuation
    let logger: Logger

    // MARK: - Finding and connecting

    /// The device's presence through `adapter`, looked up before the adapter's power state is applied.
    func lookUp(adapter: AdapterInfo, sequence: UInt64) -> Job {
        let gatt = env.gatt, inbox = self.inbox, address = config.address
        return {
            let known = await gatt.device(address: address, adapter: adapter.path)
            inbox.yield(.adapterLooked(known, adapter: adapter, sequence: sequence))
        }
    }

    /// The object may already exist (BlueZ keeps devices it has seen): no need to wait for discovery.
    func findIfKnown(adapter: String, generation: SessionGeneration) -> Job {
        let gatt = env.gatt, inbox = self.inbox, address = config.address
        return {
            if await gatt.device(address: address, adapter: adapter) != nil { inbox.yield(.foundIfStill(generation)) }
        }
    }

    func acquireSlot(_ key: String, lane: String, generation: SessionGeneration) -> Job {
        let gate = env.gate, inbox = self.inbox
        return {
            do {
                try await gate.acquire(key, lane: lane)
                inbox.yield(.machine(.connectSlotGranted(generation)))
            } catch {}
        }
    }

    func releaseSlot(_ key: String) -> Job {
        let gate = env.gate
        return { await gate.release(key) }
    }

    /// A Connect through `adapter`; its result also counts for the adapter's health (docs/adapters.md).
    func connect(_ path: String, adapter: String, generation: SessionGeneration, timeout: Duration) -> Job {
        let gatt = env.gatt, inbox = self.inbox, report = env.report, suspect = env.policy.adapterFailures
        return {
            do throws(BlueZError) {
                try await gatt.connect(device: path, timeout: timeout)
                report(.adapterOperation(adapter: adapter, error: nil))
                inbox.yield(.machine(.connectSucceeded(generation)))
            } catch .alreadyConnected {
                inbox.yield(.machine(.connectSucceeded(generation)))
            } catch {
                let kind = FailureKind(error, stage: .connect)
                if suspect.contains(kind.category) { report(.adapterOperation(adapter: adapter, error: "Connect: \(error)")) }
                inbox.yield(.machine(.failure(kind, generation)))
            }
        }
    }

    /// Pairs once the agent is registered with bluetoothd (docs/pairing.md); fails the attempt if it is not.
    func pair(_ path: String, generation: SessionGeneration, timeout: Duration) -> Job {
        let gatt = env.gatt, inbox = self.inbox, logger = self.logger
        let agentReady = env.agentReady, needsKeyboard = config.pairing.mode == .passkey
        return {
            guard await agentReady(needsKeyboard, .seconds(10)) else {
                logger.warning("the pairing agent is not registered with bluetoothd; pairing later")
                inbox.yield(.machine(.failure(.other("the pairing agent is not registered with bluetoothd"), generation)))
                return
            }
            do throws(BlueZError) {
                try await gatt.pair(device: path, timeout: timeout)
                inbox.yield(.machine(.pairSucceeded(generation)))
            } catch {
                inbox.yield(.machine(.failure(FailureKind(error, stage: .connect), generation)))
            }
        }
    }

    func resolve(_ path: String, generation: SessionGeneration, timeout: Duration) -> Job {
        let gatt = env.gatt, inbox = self.inbox
        return {
            do throws(BlueZError) {
                let tree = try await gatt.waitUntilServicesResolved(device: path, timeout: timeout)
                inbox.yield(.resolved(tree, generation))
            } catch {
                inbox.yield(.machine(.failure(FailureKind(error, stage: .resolve), generation)))
            }
        }
    }

    func backoff(_ delay: Duration, generation: SessionGeneration) -> Job {
        let inbox = self.inbox
        return {
            try? await Task.sleep(for: delay)
            if !Task.isCancelled { inbox.yield(.machine(.backoffElapsed(generation))) }
        }
    }

    /// Model and manufacturer from Device Information, read once per session; absent characteristics are fine.
    func identify(_ tree: GattTree) -> Job? {
        let deviceInformation = BluetoothUUID("180a")
        let model = tree.characteristic(BluetoothUUID("2a24")!, service: deviceInformation)
        let manufacturer = tree.characteristic(BluetoothUUID("2a29")!, service: deviceInformation)
        guard model != nil || manufacturer != nil else { return nil }
        let gatt = env.gatt, inbox = self.inbox
        return {
            func text(_ info: GattCharacteristicInfo?) async -> String? {
                guard let info, let bytes = try? await gatt.read(characteristic: info.path) else { return nil }
                let value = String(decoding: bytes, as: UTF8.self).trimmingPrefix(while: \.isWhitespace)
                return value.isEmpty ? nil : String(value)
            }
            inbox.yield(.identified(DeviceIdentity(model: await text(model), manufacturer: await text(manufacturer))))
        }
    }

    // MARK: - Values

    /// Subscribes every target in order; on a failure, stops those already subscribed and fails the attempt.
    func subscribe(_ targets: [(ChannelConfig, String, NotificationGate)], preferAcquire: Bool,
                   generation: SessionGeneration) -> Job {
        let gatt = env.gatt, inbox = self.inbox, hint = securityHint
        return {
            var done: [ActiveSubscription] = []
            do throws(BlueZError) {
                for (channel, path, gate) in targets {
                    // The hot path: each value (fd or signal path) is decoded and published on the D-Bus loop thread
                    // that received it (one decode, one publish), never crossing to a Swift executor thread.
                    let subscription = try await gatt.notifications(of: path, preferAcquire: preferAcquire,
                                                                    onValue: { gate.deliver($0) })
                    done.append(ActiveSubscription(channel: channel, subscription: subscription, gate: gate))
                }
                inbox.yield(.subscribed(done, generation))
            } catch {
                for active in done {
                    active.gate.close()
                    await active.subscription.stop()
                }
                let kind = hint(error).map { FailureKind.subscribeFailed("\(error); \($0)") }
                inbox.yield(.machine(.failure(kind ?? FailureKind(error, stage: .subscribe), generation)))
            }
        }
    }

    func pollTimer(_ channel: ChannelConfig, epoch: Int) -> Job {
        let inbox = self.inbox, interval = channel.interval, name = channel.name
        return {
            try? await Task.sleep(for: interval)
            if !Task.isCancelled { inbox.yield(.pollDue(channel: name, epoch: epoch)) }
        }
    }

    /// Reads a channel and publishes the value as a whole (reads bypass a text channel's line framer).
    func read(_ channel: ChannelConfig, _ info: GattCharacteristicInfo, into publisher: ChannelPublisher) -> Job {
        let gatt = env.gatt, logger = self.logger, hint = securityHint, report = env.report
        return {
            do throws(BlueZError) {
                publisher.publishRead(try await gatt.read(characteristic: info.path))
            } catch {
                if let hint = hint(error) {
                    logger.warning("read of \(channel.name) failed: \(error); \(hint)")
                    report(.event(.error(message: "read of \(channel.name) failed: \(error); \(hint)")))
                } else {
                    logger.warning("read of \(channel.name) failed: \(error)")
                }
            }
        }
    }

    /// docs/pairing.md: a device configured without pairing whose operation failed for lack of authentication or
    /// encryption gets told how to fix it; a device that pairs already does what it can.
    var securityHint: @Sendable (BlueZError) -> String? {
        guard config.pairing.mode == .none else { return { _ in nil } }
        let name = config.name
        return { error in
            if error.suggestsPairing {
                return "device \(name) seems to need pairing (insufficient authentication or encryption): set pairing: just_works or pairing: passkey in its config"
            }
            // What an unpaired subscription to a protected characteristic leaves on BlueZ 5.66: the AcquireNotify that
            // met the refusal is never answered, and every later subscription gets this (see BlueZError.notifyAcquired).
            if error == .notifyAcquired {
                return "BlueZ holds the notifications of device \(name) as acquired: by another program, or by an AcquireNotify that BlueZ before 5.84 never released after enabling notifications failed (as when the device refuses an unencrypted link; restarting bluetoothd clears it); if the device needs pairing, set pairing: just_works or pairing: passkey in its config"
            }
            return nil
        }
    }
}
