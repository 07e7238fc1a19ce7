/// The top-level keys of the bridge API (docs/bridge-api.md): `state_dir`, `bridge_api`, `secrets_dir`, `reply_prefix`
/// and `bridge`.
extension ConfigValidator {
    static let bridgeKeys = ["state_dir", "bridge_api", "bridge", "secrets_dir", "reply_prefix"]

    mutating func bridgeSettings(_ fields: MappingFields, into config: inout BridgeConfig) {
        if let value = fields["state_dir"], let text = nonEmptyString(value, key: "state_dir", context: "the top level") {
            if text.utf8.contains(0) {
                report(value, "state_dir must not contain NUL characters")
            } else {
                // Relative to the config file, like password_file, so a config and its state can move together.
                config.stateDir = TextFile.resolve(text, relativeTo: file)
            }
        }
        if let value = fields["secrets_dir"], let text = nonEmptyString(value, key: "secrets_dir", context: "the top level") {
            if text.utf8.contains(0) {
                report(value, "secrets_dir must not contain NUL characters")
            } else {
                config.secretsDir = TextFile.resolve(text, relativeTo: file)
            }
        }
        if let value = fields["reply_prefix"],
           let prefix = topicPrefix(value, key: "reply_prefix", context: "the top level") {
            config.replyPrefix = prefix
        }
        if let value = fields["bridge_api"], let enabled = bool(value, key: "bridge_api", context: "the top level") {
            config.bridgeAPI = enabled
        }
        if let node = fields["bridge"] {
            let fleet = fleetSettings(node)
            config.fleet = fleet
            config.mqtt.bridgeID = fleet.id    // after `mqtt:`: the will's topic depends on it
        }
    }
}
