import BridgeFeatureHost
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
        await ask(ifStopped: nil) { reply in .change(change, reply: reply) }
    }
}
