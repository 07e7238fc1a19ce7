import Bluetooth

/// The `esphome_proxy:` section (docs/configuration.md#esphome_proxy): the ESPHome native API server through which
/// Home Assistant uses the bridge's adapters as a Bluetooth proxy.
///
/// Off by default. When on it is encrypted unless told otherwise: the key comes from `encryption_key_file`, or else
/// from `<state_dir>/esphome-proxy.key`, which the daemon creates on its first start (`ESPHomeProxyKey.resolve`), so
/// `{enabled: true}` alone is a working, encrypted setup. Plaintext is accepted on a loopback address only: anyone on
/// the network could otherwise drive the adapters.
public struct ESPHomeProxySettings: Sendable, Equatable {
    public static let defaultListen = WebListen(host: "0.0.0.0", port: 6053)
    public static let defaultConnectionSlots = 3
    /// Each slot is a link the proxy may hold at once for Home Assistant, out of the adapters' own limits.
    public static let connectionSlotsRange = 1...8
    /// ESPHome's longest node name.
    public static let maximumNameLength = 31

    public var enabled = false
    public var listen = ESPHomeProxySettings.defaultListen
    /// The node name Home Assistant shows and mDNS announces: `name`, or else `bridge.id` made to fit the rule
    /// (`deviceName(from:)`).
    public var name: String = ESPHomeProxySettings.deviceName(from: FleetSettings.defaultID)
    /// `encryption`: Noise with the key below; false: plaintext (loopback only).
    public var encryption = true
    /// The key read from `encryption_key_file` when the config loaded; nil: the state directory's key (or none with
    /// encryption off).
    public var encryptionKey: ESPHomeProxyKey?
    public var encryptionKeyFile: SecretFile?
    /// `connection_slots`: how many peripherals Home Assistant may have connected through the proxy at once.
    public var connectionSlots = ESPHomeProxySettings.defaultConnectionSlots
    /// `passkeys`: the passkey the daemon's pairing agent answers for a device Home Assistant pairs through the proxy.
    public var passkeys: [BluetoothAddress: ProxyPasskey] = [:]

    public init() {}

    /// ESPHome's rule for a node name: lowercased, every character outside `a-z0-9-` replaced by `-`, at most 31
    /// characters. "Living Room Pi!" → "living-room-pi-".
    public static func deviceName(from text: String) -> String {
        var name = ""
        for character in text.lowercased() {
            guard name.count < maximumNameLength else { break }
            name.append(isAllowed(character) ? character : "-")
        }
        return name
    }

    /// Whether `text` is a node name as it stands (what an explicit `name:` must be).
    public static func isValidName(_ text: String) -> Bool {
        !text.isEmpty && text.count <= maximumNameLength && text.allSatisfy(isAllowed)
    }

    private static func isAllowed(_ character: Character) -> Bool {
        guard character.unicodeScalars.count == 1, let scalar = character.unicodeScalars.first else { return false }
        return ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-"
    }
}

/// One entry of `esphome_proxy.passkeys`: the six digits and the file under `secrets_dir` they came from.
public struct ProxyPasskey: Sendable, Equatable {
    public var passkey: Secret
    public var file: SecretFile

    public init(passkey: Secret, file: SecretFile) {
        self.passkey = passkey
        self.file = file
    }

    /// The number BlueZ's `RequestPasskey` answers with.
    public var number: UInt32? { PairingConfig.parsePasskey(passkey.value) }
}
