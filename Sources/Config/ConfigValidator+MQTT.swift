extension ConfigValidator {
    static let mqttKeys = ["host", "port", "client_id", "username", "password", "password_file", "tls", "base_topic",
                           "protocol", "keepalive"]

    mutating func mqtt(_ node: YAMLNode) -> MQTTSettings {
        let context = "mqtt"
        guard let fields = fields(of: node, allowed: Self.mqttKeys, context: context) else { return MQTTSettings() }
        var host = "localhost"
        if let value = fields["host"], let text = nonEmptyString(value, key: "host", context: context) { host = text }
        var port: Int?
        if let value = fields["port"] { port = integer(value, key: "port", context: context, range: 1...65535) }
        var clientID: String?
        if let value = fields["client_id"] {
            clientID = nonEmptyString(value, key: "client_id", context: context)
        }
        var username: String?
        if let value = fields["username"] { username = nonEmptyString(value, key: "username", context: context) }
        let (password, passwordFile) = self.password(fields)
        if password != nil, fields["username"] == nil, let key = fields.keyNode("password") ?? fields.keyNode("password_file") {
            report(key, "a password needs a username in mqtt")
        }
        var tls: TLSSettings?
        if let value = fields["tls"] { tls = self.tls(value) }
        var baseTopic = "gattbridge"
        if let value = fields["base_topic"], let text = topicPrefix(value, key: "base_topic", context: context) {
            baseTopic = text
        }
        var version = MQTTProtocolVersion.v5
        if let value = fields["protocol"],
           let parsed = choice(value, key: "protocol", context: context, as: MQTTProtocolVersion.self,
                               choices: MQTTProtocolVersion.allCases.map(\.rawValue)) {
            version = parsed
        }
        var keepalive = 30
        if let value = fields["keepalive"], let seconds = integer(value, key: "keepalive", context: context, range: 5...65535) {
            keepalive = seconds
        }
        return MQTTSettings(host: host, port: port, clientID: clientID, username: username, password: password,
                            passwordFile: passwordFile, tls: tls, baseTopic: baseTopic, protocolVersion: version, keepalive: keepalive)
    }

    /// `password_file` is read now, so a missing secret fails at load (and in `config check`) rather than at
    /// the first connection. Messages name the file, never its content.
    private mutating func password(_ fields: MappingFields) -> (Secret?, SecretFile?) {
        if let inline = fields["password"], let file = fields["password_file"] {
            let later = inline.line > file.line ? fields.keyNode("password")! : fields.keyNode("password_file")!
            report(later, "mqtt has both password and password_file; use one (password_file is preferred)")
            return (nil, nil)
        }
        if let value = fields["password"] {
            return (string(value, key: "password", context: "mqtt", secret: true).map(Secret.init), nil)
        }
        guard let value = fields["password_file"],
              let path = nonEmptyString(value, key: "password_file", context: "mqtt") else { return (nil, nil) }
        let resolved = TextFile.resolve(path, relativeTo: file)
        switch TextFile.read(resolved, limit: TextFile.secretLimit) {
        case .failure(let error):
            report(value, "cannot read password_file \"\(resolved)\": \(error)")
            return (nil, nil)
        case .success(var bytes):
            if bytes.last == 0x0A { bytes.removeLast() }
            if bytes.last == 0x0D { bytes.removeLast() }
            guard !bytes.isEmpty else {
                report(value, "password_file \"\(resolved)\" is empty")
                return (nil, nil)
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                report(value, "password_file \"\(resolved)\" is not valid UTF-8")
                return (nil, nil)
            }
            return (Secret(text), SecretFile(path: resolved, mode: TextFile.permissions(resolved)))
        }
    }

    /// A mapping of files, or `true` for TLS with the system trust store (`false`: off).
    private mutating func tls(_ node: YAMLNode) -> TLSSettings? {
        let context = "mqtt.tls"
        if case .scalar(let text, .plain) = node.content, ["true", "false", "True", "False", "TRUE", "FALSE"].contains(text) {
            return text.lowercased() == "true" ? TLSSettings() : nil
        }
        guard let fields = fields(of: node, allowed: ["ca_file", "cert_file", "key_file", "insecure"], context: context) else {
            return nil
        }
        var settings = TLSSettings()
        if let value = fields["ca_file"] { settings.caFile = nonEmptyString(value, key: "ca_file", context: context) }
        if let value = fields["cert_file"] { settings.certFile = nonEmptyString(value, key: "cert_file", context: context) }
        if let value = fields["key_file"] { settings.keyFile = nonEmptyString(value, key: "key_file", context: context) }
        if let value = fields["insecure"], let insecure = bool(value, key: "insecure", context: context) {
            settings.insecure = insecure
        }
        if (fields["cert_file"] == nil) != (fields["key_file"] == nil) {
            let present = fields.keyNode("cert_file") ?? fields.keyNode("key_file")!
            report(present, "cert_file and key_file in \(context) must be given together")
        }
        return settings
    }
}
