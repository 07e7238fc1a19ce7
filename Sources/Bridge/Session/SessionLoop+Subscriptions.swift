import BlueZ
import Bluetooth
import BridgeChannels
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
        if identity == nil, let job = work.identify(tree) { jobs.append(job) }
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
        // BlueZ 5.47–5.83 never answers an AcquireNotify whose enabling of notifications fails (the link drops, or
        // the CCC write is refused) and keeps the characteristic acquired until bluetoothd restarts: every later
        // subscription gets "Notify acquired", and removing the device then crashes bluetoothd (fixed in 5.84). A
        // bonded link is the one likely to drop just then (encryption starts with the stored key, or fails because
        // the peripheral lost its bond), so a device that pairs, or that BlueZ lists as paired, uses StartNotify,
        // whose failure is answered and cleaned up; such devices (locks, thermostats) are not the fast ones.
        let preferAcquire = !(machine.pairingRequired || machine.devicePaired)
        return work.subscribe(targets, preferAcquire: preferAcquire, generation: generation)
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

    func readJob(_ channel: ChannelConfig) -> Job? {
        guard let info = resolved[channel.name], let publisher = publishers[channel.name] else { return nil }
        return work.read(channel, info, into: publisher)
    }
}
