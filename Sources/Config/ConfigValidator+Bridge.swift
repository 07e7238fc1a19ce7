/// The top-level keys of the bridge API (docs/bridge-api.md): `state_dir` and `bridge_api`.
extension ConfigValidator {
    static let bridgeKeys = ["state_dir", "bridge_api", "bridge"]

    mutating func bridgeSettings(_ fields: MappingFields, into config: inout BridgeConfig) {
        if let value = fields["state_dir"], let text = nonEmptyString(value, key: "state_dir", context: "the top level") {
            if text.utf8.contains(0) {
                report(value, "state_dir must not contain NUL characters")
            } else {
                // Relative to the config file, like password_file, so a config and its state can move together.
                config.stateDir = TextFile.resolve(text, relativeTo: file)
            }
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
