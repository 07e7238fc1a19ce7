/// A setting that is valid but weakens security, or has no effect (`advert:` devices while adverts are off):
/// reported (never fatal) by `config check` and logged by `run` at start and on every reload. Warnings name keys and
/// files, never a secret's value.
public struct ConfigWarning: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var message: String

    public init(file: String, message: String) {
        self.file = file
        self.message = message
    }

    /// `FILE: warning: message`, like an issue without a position.
    public var description: String { "\(file): warning: \(message)" }
}

extension BridgeConfig {
    /// The warnings for this config, loaded from `file`. Pure: the password file's permissions were taken at load.
    public func warnings(file: String) -> [ConfigWarning] {
        var messages: [String] = []
        if let tls = mqtt.tls, tls.insecure {
            messages.append("mqtt.tls.insecure is set: the broker's host name is not checked against its certificate "
                + "(the certificate itself is still verified), so any server with a certificate from a trusted CA can "
                + "pose as the broker; use it for testing only")
        }
        if mqtt.tls == nil, mqtt.username != nil || mqtt.password != nil, !Self.isLoopback(mqtt.host) {
            let what = mqtt.password != nil ? "username and password go" : "username goes"
            messages.append("the MQTT \(what) to \(mqtt.host):\(mqtt.port) unencrypted (no mqtt.tls): anyone on the "
                + "network path can read \(mqtt.password != nil ? "them" : "it")")
        }
        if let passwordFile = mqtt.passwordFile, let mode = passwordFile.mode, mode & 0o077 != 0 {
            messages.append("password_file \"\(passwordFile.path)\" is accessible to group or others (mode "
                + "\(Self.octal(mode))); make it readable by its owner only (chmod 600)")
        }
        for device in devices {
            if device.pairing.mode == .passkey,
               let warning = Self.secretWarning("passkey", file: device.pairing.passkeyFile, device: device.name) {
                messages.append(warning)
            }
            if device.bindkey != nil, let warning = Self.secretWarning("bindkey", file: device.bindkeyFile, device: device.name) {
                messages.append(warning)
            }
        }
        if let keyFile = esphomeProxy.encryptionKeyFile, let mode = keyFile.mode, mode & 0o077 != 0 {
            messages.append("encryption_key_file \"\(keyFile.path)\" is accessible to group or others (mode "
                + "\(Self.octal(mode))); make it readable by its owner only (chmod 600)")
        }
        for (address, passkey) in esphomeProxy.passkeys.sorted(by: { $0.key < $1.key }) {
            if let mode = passkey.file.mode, mode & 0o077 != 0 {
                messages.append("passkey file \"\(passkey.file.path)\" of \(address) in esphome_proxy.passkeys is accessible "
                    + "to group or others (mode \(Self.octal(mode))); make it readable by its owner only (chmod 600)")
            }
        }
        let unheard = devices.filter { $0.advert != nil }.map { "\"\($0.name)\"" }
        if !adverts.enabled, !unheard.isEmpty {
            let (which, whose) = unheard.count == 1 ? ("device \(unheard[0]) has", "its")
                : ("devices \(unheard.joined(separator: ", ")) have", "their")
            messages.append("\(which) advert: but adverts.enabled is false, so \(whose) broadcasts are never listened to; "
                + "set adverts: {enabled: true}")
        }
        return messages.map { ConfigWarning(file: file, message: $0) }
    }

    /// Loopback by name or address, decided without DNS: `localhost` (and `*.localhost`, RFC 6761), 127.0.0.0/8,
    /// `::1`. Anything else may cross a network.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// A device's passkey or bindkey written inline, or in a `<key>_file` that group or others can read.
    private static func secretWarning(_ key: String, file: SecretFile?, device: String) -> String? {
        guard let file else {
            return "device \"\(device)\" has its \(key) in the config file; put it in a \(key)_file readable by its owner only"
        }
        guard let mode = file.mode, mode & 0o077 != 0 else { return nil }
        return "\(key)_file \"\(file.path)\" of device \"\(device)\" is accessible to group or others (mode \(octal(mode))); "
            + "make it readable by its owner only (chmod 600)"
    }

    private static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
