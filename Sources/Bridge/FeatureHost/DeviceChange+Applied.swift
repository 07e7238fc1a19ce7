import Config

extension DeviceChange {
    /// The change applied to `config`: the new config and the device concerned, or why not. Idempotent where a reload
    /// may have got there first (docs/bridge-api.md saves the drop-in before the change, and a reload reads it): adding
    /// a device the config already has, identical, succeeds without a change.
    package func applied(to config: BridgeConfig)
        -> Result<(config: BridgeConfig, device: DeviceConfig), DeviceChangeError> {
        var new = config
        switch self {
        case .add(let device):
            if let same = new.devices.first(where: { $0.name == device.name }), same == device,
               same.source.kind == device.source.kind, same.source.kind != .config {
                return .success((new, same))
            }
            // Adopting (docs/adverts.md): a saved device takes the place of the auto device with its address.
            if device.source.kind != .advert,
               let auto = new.devices.firstIndex(where: { $0.address == device.address && $0.source.kind == .advert }) {
                new.devices.remove(at: auto)
            }
            if let taken = new.devices.first(where: { $0.topicLevel == device.topicLevel }) {
                return .failure(.nameTaken(taken.name))
            }
            if let taken = new.devices.first(where: { $0.address == device.address }) {
                return .failure(.addressTaken(device.address.description, device: taken.name))
            }
            new.devices.append(device)
            return .success((new, device))
        case .remove(let name):
            guard let device = new.devices.first(where: { $0.name == name }) else {
                return .failure(.unknownDevice(name))
            }
            // An auto device (docs/adverts.md) is removed from the running config: its slot and retained topics go
            // now; it comes back only when heard again while its format is in `adverts.auto`.
            guard device.source.kind == .api || device.source.kind == .advert else {
                return .failure(.fromConfigFile(name, file: device.source.file, line: device.source.line))
            }
            new.devices.removeAll { $0.name == name }
            return .success((new, device))
        }
    }
}
