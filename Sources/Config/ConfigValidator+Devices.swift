import Bluetooth
import Codecs

extension ConfigValidator {
    static let deviceKeys = ["name", "address", "channels"]
    /// Optional device keys (docs/adapters.md `adapter`).
    static let optionalDeviceKeys = ["adapter"]
    /// `B/bridge/…` carries the bridge's own state, events and log.
    static let reservedDeviceLevels: Set<String> = ["bridge"]
    /// Levels under `B/D/` that the bridge itself publishes (docs/mqtt.md availability, RSSI, and the fleet's `B/D/owner`
    /// record, reserved with or without `bridge:` so a config can join a fleet unchanged).
    static let reservedChannelLevels: Set<String> = ["availability", "rssi", "owner"]

    mutating func devices(_ node: YAMLNode, adapters: [AdapterSetting]? = nil) -> [DeviceConfig] {
        if node.isNull { return [] }
        guard case .sequence(let items) = node.content else {
            report(node, "devices must be a list of devices, got \(node.kindDescription)")
            return []
        }
        var registry = DeviceRegistry()
        registry.adapters = adapters
        return items.enumerated().compactMap { index, item in
            device(item, index: index, registry: &registry, source: DeviceSource(kind: .config, file: file, line: item.line))
        }
    }

    /// One device object (an entry of `devices:`, a drop-in file, or a `device/add` request); names and addresses
    /// are checked against `registry` and added to it. nil when anything about it is wrong (every problem is
    /// reported).
    mutating func device(_ item: YAMLNode, index: Int, registry: inout DeviceRegistry,
                         source: DeviceSource) -> DeviceConfig? {
        var context = peekName(item).map { "device \"\($0)\"" } ?? "device #\(index + 1)"
        guard let fields = fields(of: item, allowed: Self.deviceKeys + Self.optionalDeviceKeys + Self.pairingKeys
                                      + Self.advertDeviceKeys, context: context) else {
            return nil
        }
        // A passive device (`advert:`) has no channels: it is only heard, never connected.
        requireKeys(fields["advert"] == nil ? Self.deviceKeys : Self.deviceKeys.filter { $0 != "channels" },
                    in: fields, context: context)

        var name: String?
        if let value = fields["name"], let text = nonEmptyString(value, key: "name", context: context) {
            context = "device \"\(text)\""
            name = text
            let level = sanitizeTopicLevel(text)
            if text.unicodeScalars.contains(where: isRefusedInTopics) {
                // A newline would split every log line that names the device; no label needs one.
                report(value, "device name \"\(ReportText.escaped(text, maxBytes: 128))\" must not contain control characters")
                name = nil
            } else if level.isEmpty {
                report(value, "device name \"\(text)\" is empty as an MQTT topic level")
                name = nil
            } else if Self.reservedDeviceLevels.contains(level) {
                report(value, "device name \"\(text)\" is reserved (the bridge publishes its own state under it)")
                name = nil
            } else if let first = registry.levels[level] {
                let same = first.name == text ? "" : " (both are \"\(level)\" as a topic level)"
                report(value, "duplicate device name \"\(text)\"\(same); first used by device \"\(first.name)\" at \(first.position)")
                name = nil
            }
        }

        var address: BluetoothAddress?
        if let value = fields["address"], let text = string(value, key: "address", context: context) {
            if let parsed = BluetoothAddress(text) {
                if let first = registry.addresses[parsed] {
                    report(value, "duplicate address \(parsed) in \(context); already used by device \"\(first.name)\" at \(first.position)")
                } else {
                    address = parsed
                }
            } else {
                report(value, "address in \(context) must be a Bluetooth address like \"AA:BB:CC:DD:EE:FF\", got \"\(text)\"")
            }
        }
        // Registered even when the rest of the device is invalid, so a later duplicate is still reported.
        if let name, let value = fields["name"] {
            registry.levels[sanitizeTopicLevel(name)] = (name, registry.position(of: value, in: file))
        }
        if let address, let value = fields["address"] {
            registry.addresses[address] = (name ?? context, registry.position(of: value, in: file))
        }

        var channels: [ChannelConfig] = []
        if let value = fields["channels"] {
            channels = self.channels(value, device: name.map { "device \"\($0)\"" } ?? context, deviceContext: context)
        }
        let secrets = source.kind == .api ? registry.secretsDir.map { ($0, registry.passkeyFiles) } : nil
        let pairing = self.pairing(fields, context: context, secrets: secrets)
        if let file = pairing?.passkeyFile?.path {
            registry.passkeyFiles[SecretsDirectory.realPath(file) ?? file] = name ?? context
        }
        var adapter = fields["adapter"].flatMap { deviceAdapter($0, context: context) }
        if let name = adapter?.name, let listed = registry.adapters?.map(\.name), !listed.contains(name),
           let node = fields["adapter"] {
            // A device pinned to an adapter the bridge does not use would never connect, without a word.
            report(node, "adapter \(name) of \(context) is not in bluetooth.adapters (\(listed.joined(separator: ", "))); add it there or use any")
            adapter = .invalid
        }
        let advert = deviceAdvert(fields, context: context, secretsDir: source.kind == .api ? registry.secretsDir : nil)
        let passive = fields["channels"] == nil && advert?.selection != nil
        guard let name, let address, !channels.isEmpty || passive, let pairing, adapter != .invalid, let advert else {
            return nil
        }
        return DeviceConfig(name: name, address: address, channels: channels, source: source, pairing: pairing,
                            adapter: adapter?.name, advert: advert.selection, bindkey: advert.bindkey,
                            bindkeyFile: advert.bindkeyFile, allowPlaintext: advert.allowPlaintext)
    }

    private mutating func channels(_ node: YAMLNode, device: String, deviceContext: String) -> [ChannelConfig] {
        guard case .sequence(let items) = node.content else {
            report(node, "channels in \(deviceContext) must be a list of channels, got \(node.kindDescription)")
            return []
        }
        guard !items.isEmpty else {
            report(node, "\(deviceContext) has no channels")
            return []
        }
        var channels: [ChannelConfig] = []
        var levels: [String: (name: String, node: YAMLNode)] = [:]
        var failed = false
        for (index, item) in items.enumerated() {
            guard let parsed = channel(item, index: index, device: device) else {
                failed = true
                continue
            }
            let (channel, levelNode) = parsed
            let level = channel.topicLevel
            if level.isEmpty {
                report(levelNode, "channel \"\(channel.name)\" is empty as an MQTT topic level")
                failed = true
            } else if Self.reservedChannelLevels.contains(level) {
                report(levelNode, "channel \"\(channel.name)\" in \(deviceContext) cannot use the topic level \"\(level)\" (the bridge publishes the device's \(level) there)")
                failed = true
            } else if let first = levels[level] {
                if channel.topic == nil && first.name == channel.name {
                    report(levelNode, "duplicate channel name \"\(channel.name)\" in \(deviceContext) (first at \(first.node.position))")
                } else {
                    report(levelNode, "channel \"\(channel.name)\" in \(deviceContext) has the same topic level \"\(level)\" as channel \"\(first.name)\" at \(first.node.position)")
                }
                failed = true
            } else {
                levels[level] = (channel.name, levelNode)
                channels.append(channel)
            }
        }
        return failed ? [] : channels
    }
}

/// The device names (as topic levels) and addresses taken so far, across the main file, its drop-ins and the running
/// config, with where each was first defined for the duplicate message.
struct DeviceRegistry {
    var levels: [String: (name: String, position: String)] = [:]
    var addresses: [BluetoothAddress: (name: String, position: String)] = [:]
    /// Positions read `FILE:LINE:COLUMN` rather than `LINE:COLUMN`: set when devices of several files meet.
    var qualified = false
    /// `bluetooth.adapters` (nil: every adapter BlueZ has): a device may only be pinned to one of them.
    var adapters: [AdapterSetting]?
    /// `secrets_dir`, for devices from the bridge API (their `passkey_file` and `bindkey_file` must be under it);
    /// nil: not checked.
    var secretsDir: String?
    /// The real path of every `passkey_file` in use, and the device using it: one device's passkey is never handed
    /// to a new address.
    var passkeyFiles: [String: String] = [:]

    init() {}

    /// Seeds the registry with devices already validated (another file, or the running config).
    init(devices: [DeviceConfig]) {
        qualified = true
        for device in devices {
            let position = device.source.line > 0 ? "\(device.source.file):\(device.source.line)" : device.source.file
            levels[device.topicLevel] = (device.name, position)
            addresses[device.address] = (device.name, position)
            if let file = device.pairing.passkeyFile?.path {
                passkeyFiles[SecretsDirectory.realPath(file) ?? file] = device.name
            }
        }
    }

    func position(of node: YAMLNode, in file: String) -> String {
        if node.path != nil { return node.position }
        return qualified ? "\(file):\(node.position)" : node.position
    }
}
