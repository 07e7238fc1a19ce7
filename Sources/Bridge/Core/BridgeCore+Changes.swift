import Config

/// Config changes: reloads and the bridge API's device changes, applied as a diff (`ConfigDiff`) one after another
/// (`CoreMachine`): sessions of devices that were removed or changed stop first (so no command reaches a session
/// being torn down), their retained topics are cleared, then the new config is installed and new sessions start;
/// devices whose config did not change keep their session and connection.
extension BridgeCore: DeviceManaging {
    /// Applies a reload. `basedOn`: the generation (`running`) when its files were read.
    public nonisolated func apply(_ new: BridgeConfig, basedOn generation: UInt64, mqttReplaced: Bool = false) async {
        _ = await change(.reload(new, basedOn: generation, mqttReplaced: mqttReplaced))
    }

    public nonisolated func currentConfig() async -> BridgeConfig { running.config }

    public nonisolated func updateDevices(_ change: DeviceChange) async -> Result<DeviceConfig, DeviceChangeError>? {
        switch await self.change(.device(change)) {
        case nil: return nil
        case .failure(let error)?: return .failure(error)
        case .success(let device)?:
            // A device change always names its device.
            guard let device else { return nil }
            return .success(device)
        }
    }

    /// Posts the change and waits for its answer; nil when the bridge stops first.
    private nonisolated func change(_ change: ConfigChange) async -> Result<DeviceConfig?, DeviceChangeError>? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<DeviceConfig?, DeviceChangeError>?, Never>) in
            if case .terminated = sink.yield(.change(change, reply: { continuation.resume(returning: $0) })) {
                continuation.resume(returning: nil)
            }
        }
    }

    /// Carries out the machine's decisions, in order. The router sees the machine's fleet view first: a command
    /// replayed below must not find its device still held in the router's table.
    func run(_ actions: [CoreMachine.Action]) async {
        if router.fleet != machine.fleet { publishRoutes() }
        for action in actions {
            switch action {
            case .stop(let id, let devices):
                let leaving = devices.compactMap { device -> DeviceSession? in
                    byAddress[device.address] = nil
                    return sessions.removeValue(forKey: device.name)
                }
                publishRoutes()     // their commands are refused from now on
                let sink = self.sink
                adapterJobs.continuation.yield {
                    await withDiscardingTaskGroup { group in
                        for session in leaving { group.addTask { await session.stop() } }
                    }
                    sink.yield(.sessionsStopped(id))
                }
            case .install(let old, let new, let diff, let mqttReplaced, let fleetBefore):
                await install(old: old, new: new, diff: diff, mqttReplaced: mqttReplaced, fleetBefore: fleetBefore)
            case .finished(let id, let result):
                replies.removeValue(forKey: id)?(result)
            case .holdValues(let device):
                _ = holders[device]?.hold()
            case .releaseValues(let device, let deliver):
                holders[device]?.release(deliver: deliver)
            case .announceHeld(let device, let held):
                if let session = sessions[device] { host.emit(.held(session.config, held)) }
            case .replay(let messages):
                for message in messages { router.route(message) }
            case .ownershipChanged(let device, let owned):
                guard let session = sessions[device] else { break }
                session.send(.machine(.ownership(owned)))
                announceOwnership(session.config)
                placeDevices()      // an owned device takes a connection slot; one given up frees it
            case .announceOwnership(let device):
                if let device = config.devices.first(where: { $0.name == device }) { announceOwnership(device) }
            }
        }
    }

    private func install(old: BridgeConfig, new: BridgeConfig, diff: ConfigDiff, mqttReplaced: Bool,
                         fleetBefore: FleetView) async {
        let oldTopics = BridgeTopics(settings: old.mqtt)
        for device in diff.leaving {
            placement.forget(device)
            holders[device.name] = nil
            logger.notice("device \(device.name) stopped (removed or changed)")
            // Fleet: the retained topics of a device another bridge owns are that bridge's (docs/fleet.md).
            guard fleetBefore.owns(device.name) else { continue }
            for channel in device.channels where channel.retain {
                link.publish(oldTopics.state(device, channel), "", qos: 1, retain: true)
            }
            host.emit(.deviceRemoved(device, topics: oldTopics))
        }
        if fleetBefore.isFleet != machine.fleet.isFleet {
            // Joining a fleet gives every device up until the fleet says otherwise; leaving takes them all.
            for session in sessions.values { session.send(.machine(.ownership(new.fleet == nil))) }
        }
        if adapterSet.settings != new.bluetooth {
            adapterSet.settings = new.bluetooth
            adapterSet.update(await bluez.adapters())
        }
        let available = await bluez.isAvailable
        store.update { state in
            state.install(new, generation: machine.generation)
            state.fleet(machine.fleet)
        }
        for device in diff.starting where sessions[device.name] == nil {
            await startSession(device, bluezAvailable: available)
            logger.notice("device \(device.name) started")
        }
        publishRoutes()
        // A new client gets its subscriptions from `clientReplaced`; an unchanged one keeps them (subscribing again
        // would replay retained messages).
        if diff.baseChanged && !mqttReplaced {
            for filter in oldTopics.commandFilters { link.unsubscribe(filter) }
            subscribeCommands()
        }
        if diff.bridgeStateMoved {
            link.publish(oldTopics.bridgeState, "", qos: 1, retain: true)
            link.publish(topics.bridgeState, "online", qos: 1, retain: true)
        }
        host.emit(.configApplied(old: old, new: new))
        placeDevices()
    }
}
