import BlueZ
import Bluetooth
import Codecs
import Config
import Logging

/// Resolving the GATT tree, subscribing to notifications, and the timed reads of `read` channels.
extension SessionLoop {
    mutating func resolved(_ tree: GattTree, _ generation: SessionGeneration, _ jobs: inout [Job]) {
        guard machine.generation == generation else { return }
        var found: [String: GattCharacteristicInfo] = [:]
        for channel in config.channels {
            guard let info = tree.characteristic(channel.characteristic, service: channel.service) else {
                let where_ = channel.service.map { "\($0)/" } ?? ""
                logger.warning("characteristic \(where_)\(channel.characteristic) of channel \(channel.name) not found")
                drive(.failure(.characteristicMissing("\(channel.name) (\(where_)\(channel.characteristic))"), generation),
                      &jobs)
                return
            }
            found[channel.name] = info
        }
        resolved = found
        drive(.servicesResolved(generation), &jobs)
        if identity == nil, let job = identityJob(tree) { jobs.append(job) }
    }

    /// Model and manufacturer from Device Information, read once per session; absent characteristics are fine.
    func identityJob(_ tree: GattTree) -> Job? {
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

    func mode(of channel: ChannelConfig) -> ChannelMode {
        if let mode = channel.mode { return mode }
        guard let info = resolved[channel.name] else { return .read }
        return info.canNotify ? .notify : .read
    }

    func subscribeJob(_ generation: SessionGeneration) -> Job {
        let targets = config.channels.filter { mode(of: $0) == .notify }.compactMap {
            channel -> (ChannelConfig, String, NotificationGate)? in
            guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
            return (channel, info.path, NotificationGate(publisher: publisher))
        }
        let gatt = env.gatt, inbox = self.inbox, hint = securityHint
        // BlueZ 5.47–5.83 never answers an AcquireNotify whose enabling of notifications fails (the link drops, or
        // the CCC write is refused) and keeps the characteristic acquired until bluetoothd restarts: every later
        // subscription gets "Notify acquired", and removing the device then crashes bluetoothd (fixed in 5.84). A
        // bonded link is the one likely to drop just then (encryption starts with the stored key, or fails because
        // the peripheral lost its bond), so a device that pairs, or that BlueZ lists as paired, uses StartNotify,
        // whose failure is answered and cleaned up; such devices (locks, thermostats) are not the fast ones.
        let preferAcquire = !(machine.pairingRequired || machine.devicePaired)
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

    mutating func subscribed(_ list: [ActiveSubscription], _ generation: SessionGeneration, _ jobs: inout [Job]) {
        guard machine.generation == generation, machine.state == .subscribing else {
            for active in list { active.gate.close() }
            jobs.append { for active in list { await active.subscription.stop() } }
            return
        }
        let inbox = self.inbox
        for active in list {
            logger.debug("channel \(active.channel.name) subscribed via \(active.subscription.deliveryName)")
            subscriptions.append(active)
            active.gate.open()
            let publisher = publishers[active.channel.name]
            // The stream carries no values (they go to the gate); its end is the cue that the link or the
            // characteristic went.
            jobs.append {
                for await _ in active.subscription.ended {}
                publisher?.flush()
                inbox.yield(.subscriptionEnded(generation, channel: active.channel.name))
            }
        }
        drive(.subscribed(generation), &jobs)
    }

    mutating func dropSubscriptions(_ jobs: inout [Job]) {
        guard !subscriptions.isEmpty else { return }
        let list = subscriptions
        subscriptions = []
        for active in list { active.gate.close() }
        jobs.append { for active in list { await active.subscription.stop() } }
    }

    // MARK: - Reads

    func pollTimer(_ channel: ChannelConfig, epoch: Int) -> Job {
        let inbox = self.inbox, interval = channel.interval, name = channel.name
        return {
            try? await Task.sleep(for: interval)
            if !Task.isCancelled { inbox.yield(.pollDue(channel: name, epoch: epoch)) }
        }
    }

    /// Reads a channel and publishes the value as a whole (reads bypass a text channel's line framer).
    func readJob(_ channel: ChannelConfig) -> Job? {
        guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
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
}
