import Bluetooth

extension ConfigValidator {
    static let deviceKeys = ["name", "address", "channels"]
    /// `B/bridge/…` carries the bridge's own state, events and log.
    static let reservedDeviceLevels: Set<String> = ["bridge"]

    mutating func devices(_ node: YAMLNode) -> [DeviceConfig] {
        if node.isNull { return [] }
        guard case .sequence(let items) = node.content else {
            report(node, "devices must be a list of devices, got \(node.kindDescription)")
            return []
        }
        var devices: [DeviceConfig] = []
        var levels: [String: (name: String, node: YAMLNode)] = [:]
        var addresses: [BluetoothAddress: (name: String, node: YAMLNode)] = [:]
        for (index, item) in items.enumerated() {
            var context = peekName(item).map { "device \"\($0)\"" } ?? "device #\(index + 1)"
            guard let fields = fields(of: item, allowed: Self.deviceKeys, context: context) else { continue }
            requireKeys(Self.deviceKeys, in: fields, context: context)

            var name: String?
            if let value = fields["name"], let text = nonEmptyString(value, key: "name", context: context) {
                context = "device \"\(text)\""
                name = text
                let level = sanitizeTopicLevel(text)
                if level.isEmpty {
                    report(value, "device name \"\(text)\" is empty as an MQTT topic level")
                    name = nil
                } else if Self.reservedDeviceLevels.contains(level) {
                    report(value, "device name \"\(text)\" is reserved (the bridge publishes its own state under it)")
                    name = nil
                } else if let first = levels[level] {
                    let same = first.name == text ? "" : " (both are \"\(level)\" as a topic level)"
                    report(value, "duplicate device name \"\(text)\"\(same); first used by device \"\(first.name)\" at \(first.node.line):\(first.node.column)")
                    name = nil
                } else {
                    levels[level] = (text, value)
                }
            }

            var address: BluetoothAddress?
            if let value = fields["address"], let text = string(value, key: "address", context: context) {
                if let parsed = BluetoothAddress(text) {
                    if let first = addresses[parsed] {
                        report(value, "duplicate address \(parsed) in \(context); already used by device \"\(first.name)\" at \(first.node.line):\(first.node.column)")
                    } else {
                        addresses[parsed] = (name ?? context, value)
                        address = parsed
                    }
                } else {
                    report(value, "address in \(context) must be a Bluetooth address like \"AA:BB:CC:DD:EE:FF\", got \"\(text)\"")
                }
            }

            var channels: [ChannelConfig] = []
            if let value = fields["channels"] {
                channels = self.channels(value, device: name.map { "device \"\($0)\"" } ?? context, deviceContext: context)
            }
            if let name, let address, !channels.isEmpty {
                devices.append(DeviceConfig(name: name, address: address, channels: channels))
            }
        }
        return devices
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
            } else if level == "availability" || level == "rssi" {
                report(levelNode, "channel \"\(channel.name)\" in \(deviceContext) cannot use the topic level \"\(level)\" (the bridge publishes the device's \(level) there)")
                failed = true
            } else if let first = levels[level] {
                if channel.topic == nil && first.name == channel.name {
                    report(levelNode, "duplicate channel name \"\(channel.name)\" in \(deviceContext) (first at \(first.node.line):\(first.node.column))")
                } else {
                    report(levelNode, "channel \"\(channel.name)\" in \(deviceContext) has the same topic level \"\(level)\" as channel \"\(first.name)\" at \(first.node.line):\(first.node.column)")
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
