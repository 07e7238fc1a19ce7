import Bluetooth

/// The `esphome_proxy:` section (docs/configuration.md#esphome_proxy). Read after the top-level keys, since `name`
/// defaults to `bridge.id` and the passkey files lie under `secrets_dir`.
extension ConfigValidator {
    static let esphomeProxyKeys = ["enabled", "listen", "name", "encryption", "encryption_key_file", "connection_slots",
                                   "passkeys"]

    mutating func esphomeProxy(_ node: YAMLNode?, config: BridgeConfig) -> ESPHomeProxySettings {
        var settings = ESPHomeProxySettings()
        settings.name = ESPHomeProxySettings.deviceName(from: config.fleet?.id ?? FleetSettings.defaultID)
        let context = "esphome_proxy"
        guard let node, let fields = fields(of: node, allowed: Self.esphomeProxyKeys, context: context) else {
            return settings
        }
        if let value = fields["enabled"], let enabled = bool(value, key: "enabled", context: context) {
            settings.enabled = enabled
        }
        if let listen = listen(fields, context: context) { settings.listen = listen }
        if let value = fields["name"], let text = nonEmptyString(value, key: "name", context: context) {
            if ESPHomeProxySettings.isValidName(text) {
                settings.name = text
            } else {
                report(value, "name in \(context) must be at most \(ESPHomeProxySettings.maximumNameLength) characters "
                    + "a-z, 0-9 and -, got \"\(text)\" (perhaps \"\(ESPHomeProxySettings.deviceName(from: text))\")")
            }
        }
        if let value = fields["encryption"], let encryption = bool(value, key: "encryption", context: context) {
            settings.encryption = encryption
        }
        if let value = fields["encryption_key_file"],
           let path = nonEmptyString(value, key: "encryption_key_file", context: context) {
            let resolved = TextFile.resolve(path, relativeTo: file)
            do throws(ESPHomeProxyKeyError) {
                settings.encryptionKey = try ESPHomeProxyKey.read(file: resolved)
                settings.encryptionKeyFile = SecretFile(path: resolved, mode: TextFile.permissions(resolved))
            } catch {
                report(value, error.description)
            }
            if !settings.encryption, let key = fields.keyNode("encryption_key_file") {
                report(key, "\(context) has encryption: false and encryption_key_file; drop one")
            }
        }
        if let value = fields["connection_slots"],
           let slots = integer(value, key: "connection_slots", context: context,
                               range: ESPHomeProxySettings.connectionSlotsRange) {
            settings.connectionSlots = slots
        }
        if let value = fields["passkeys"] { settings.passkeys = proxyPasskeys(value, secretsDir: config.secretsDir) }
        if settings.enabled, !settings.encryption, !settings.listen.isLoopback {
            let at = fields["encryption"] ?? node
            report(at, "\(context) listens on \(settings.listen), which is not a loopback address: it needs encryption "
                + "(anyone on the network could use the adapters through an unencrypted proxy)")
        }
        return settings
    }

    /// `{ADDRESS: passkey_file}`: each file under `secrets_dir`, like a device's passkey file added over MQTT.
    private mutating func proxyPasskeys(_ node: YAMLNode, secretsDir: String) -> [BluetoothAddress: ProxyPasskey] {
        let context = "esphome_proxy.passkeys"
        var passkeys: [BluetoothAddress: ProxyPasskey] = [:]
        if node.isNull { return passkeys }
        guard case .mapping(let pairs) = node.content else {
            report(node, "passkeys in esphome_proxy must be a mapping of Bluetooth addresses to passkey files, got "
                + node.kindDescription)
            return passkeys
        }
        for pair in pairs {
            guard case .scalar(let text, _) = pair.key.content, let address = BluetoothAddress(text) else {
                report(pair.key, "keys in \(context) must be Bluetooth addresses like \"AA:BB:CC:DD:EE:FF\", got "
                    + pair.key.kindDescription)
                continue
            }
            guard passkeys[address] == nil else {
                report(pair.key, "duplicate address \(address) in \(context)")
                continue
            }
            guard let path = secretFilePath(pair.value, key: "passkey_file", context: "\(context) \(address)",
                                            secretsDir: secretsDir) else { continue }
            switch PairingConfig.readPasskey(file: path) {
            case .failure(let problem):
                report(pair.value, problem.description)
            case .success(let digits):
                passkeys[address] = ProxyPasskey(passkey: Secret(digits),
                                                 file: SecretFile(path: path, mode: TextFile.permissions(path)))
            }
        }
        return passkeys
    }
}
