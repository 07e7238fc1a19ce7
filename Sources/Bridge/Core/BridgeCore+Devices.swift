import Config

/// The bridge API's changes, applied as a diff like a reload: only the device concerned starts or stops.
extension BridgeCore: DeviceManaging {
    public func currentConfig() async -> BridgeConfig { config }

    public func updateDevices(_ change: DeviceChange) async -> Result<DeviceConfig, DeviceChangeError> {
        var new = config
        switch change {
        case .add(let device):
            // Checked again here: the feature validated against a config a reload may have replaced since.
            if let taken = new.devices.first(where: { $0.topicLevel == device.topicLevel }) {
                return .failure(.nameTaken(taken.name))
            }
            if let taken = new.devices.first(where: { $0.address == device.address }) {
                return .failure(.addressTaken(device.address.description, device: taken.name))
            }
            new.devices.append(device)
            await apply(new)
            return .success(device)
        case .remove(let name):
            guard let device = new.devices.first(where: { $0.name == name }) else {
                return .failure(.unknownDevice(name))
            }
            guard device.source.kind == .api else {
                return .failure(.fromConfigFile(name, file: device.source.file, line: device.source.line))
            }
            new.devices.removeAll { $0.name == name }
            await apply(new)
            return .success(device)
        }
    }
}
