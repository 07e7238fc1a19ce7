import Adverts
import Codecs

/// The config file as a JSON Schema (draft 2020-12), for editors that validate YAML as it is typed (the YAML
/// language server reads a `# yaml-language-server: $schema=…` first line). `gattbridge config schema` prints it.
///
/// The key lists, codec names and enum spellings come from the validator's own definitions (a key added to one of
/// its lists without a property here stops `config schema` at its precondition); `Tests/docs/test_config_schema.py`
/// runs the validator and this schema on the same configs, and probes every mapping for the keys each knows. Rules that span keys (a passkey needs
/// `pairing: passkey`, `values` needs an encoding codec, files that must exist) stay the validator's alone: the
/// schema is a typing aid, `gattbridge config check` the verdict.
public enum ConfigSchema {
    /// The schema's `$id`: where the guide says it is described.
    public static let id = "https://gattbridge.invalid/config.schema.json"

    public static var document: JSONValue {
        .object([
            ("$schema", "https://json-schema.org/draft/2020-12/schema"),
            ("$id", .string(id)),
            ("title", "gattbridge configuration"),
            ("description", "The YAML config of gattbridge run (docs/configuration.md). An empty file is valid: every section has defaults."),
            ("type", ["object", "null"]),
            ("additionalProperties", false),
            ("properties", .object([
                ("mqtt", mqtt),
                ("bluetooth", bluetooth),
                ("homeassistant", homeassistant),
                ("devices", .object([
                    ("description", "The peripherals to keep connected (or, with advert, to listen to) and bridge; devices added over MQTT are saved apart, in <state_dir>/devices.d/."),
                    ("type", ["array", "null"]),
                    ("items", ["$ref": "#/$defs/device"]),
                ])),
                ("adverts", adverts),
                ("web", web),
                ("esphome_proxy", esphomeProxy),
                ("state_dir", string("Where devices added over MQTT are saved (devices.d/<name>.yaml); relative to the config file's directory.", default: "/var/lib/gattbridge")),
                ("bridge_api", boolean("false: no B/bridge/request/# subscription (the retained bridge/devices and bridge/info stay).", default: true)),
                ("secrets_dir", string("The only directory a device added over MQTT may name a passkey_file or bindkey_file in; relative to the config file's directory.", default: "/etc/gattbridge/secrets")),
                ("reply_prefix", topicPrefix("MQTT 5 Response Topics are answered only under this prefix; unset: anywhere outside base_topic and the discovery prefix.", default: nil)),
                ("bridge", bridge),
            ])),
            ("$defs", .object([
                ("device", device),
                ("channel", channel),
                ("seconds", .object([
                    ("description", "A number of seconds greater than 0 and at most 1000000000, integer or decimal, unquoted."),
                    ("type", "number"),
                    ("exclusiveMinimum", 0),
                    ("maximum", .double(Seconds.maximum)),
                ])),
                ("adapterName", .object([("type", "string"), ("pattern", "^hci[0-9]+$")])),
            ])),
        ])
    }

    /// The schema as indented JSON text, ending with a newline.
    public static var text: String {
        var out = ""
        Self.write(document, indent: "", to: &out)
        return out + "\n"
    }

    // MARK: sections

    private static var mqtt: JSONValue {
        section("The MQTT broker and the bridge's topics (docs/configuration.md#mqtt).", keys: ConfigValidator.mqttKeys, [
            "host": string("The broker's host name or address.", default: "localhost"),
            "port": integer("The broker's port; default 1883, or 8883 with tls.", 1...65535),
            "client_id": string("The MQTT client id; default gattbridge-<hostname>."),
            "username": string("The broker user; the password never reaches logs or MQTT."),
            "password": string("The broker password, inline (accepted; password_file is preferred)."),
            "password_file": string("A file holding the broker password, relative to the config file's directory."),
            "tls": .object([
                ("description", "true for TLS with the system trust store, or the files to use."),
                ("default", false),
                ("oneOf", [
                    ["type": "boolean"],
                    .object([
                        ("type", ["object", "null"]),
                        ("additionalProperties", false),
                        ("properties", .object([
                            ("ca_file", string("CA certificate(s) in PEM.")),
                            ("cert_file", string("Client certificate in PEM (with key_file).")),
                            ("key_file", string("Client key in PEM (with cert_file).")),
                            ("insecure", boolean("Stops checking the broker's host name against its certificate (the certificate is still verified): for testing; warned about.", default: false)),
                        ])),
                        ("dependentRequired", ["cert_file": ["key_file"], "key_file": ["cert_file"]]),
                    ]),
                ]),
            ]),
            "base_topic": topicPrefix("B in docs/mqtt.md: the first levels of every topic.", default: "gattbridge"),
            "protocol": .object([
                ("description", "The MQTT protocol version (\"5\" may be written unquoted)."),
                // The validator takes a scalar's text as written, so an unquoted 5 is "5" to it.
                ("enum", .array(MQTTProtocolVersion.allCases.flatMap { version -> [JSONValue] in
                    [.string(version.rawValue)] + (Int(version.rawValue).map { [.int($0)] } ?? [])
                })),
                ("default", .string(MQTTProtocolVersion.v5.rawValue)),
            ]),
            "keepalive": integer("Seconds between keep-alive pings.", 5...65535, default: 30),
        ])
    }

    private static var bluetooth: JSONValue {
        var adapters = section("", keys: ["name", "max_connections"], [
            "name": ["$ref": "#/$defs/adapterName"],
            "max_connections": integer("Devices the bridge keeps through this adapter at most.", 1...64, default: 5),
        ])
        adapters = adding(adapters, ("required", ["name"]))
        return section("Which adapters the bridge uses (docs/adapters.md).", keys: ["adapter", "adapters", "default_agent"], [
            "adapter": .object([("description", "One adapter (older spelling of adapters: [hciN])."), ("$ref", "#/$defs/adapterName")]),
            "adapters": .object([
                ("description", "The adapters to use; default: every adapter BlueZ has, as they come and go."),
                ("type", "array"),
                ("minItems", 1),
                ("items", ["oneOf": [["$ref": "#/$defs/adapterName"], adapters]]),
            ]),
            "default_agent": boolean("true: the pairing agent is also BlueZ's default agent (docs/pairing.md).", default: false),
        ], exclusive: [["adapter", "adapters"]])
    }

    private static var homeassistant: JSONValue {
        section("Home Assistant MQTT discovery (docs/home-assistant.md).", keys: ["enabled", "discovery_prefix"], [
            "enabled": boolean("Announce the devices to Home Assistant.", default: true),
            "discovery_prefix": topicPrefix("Home Assistant's discovery prefix.", default: "homeassistant"),
        ])
    }

    private static var bridge: JSONValue {
        section("This bridge in a fleet on one broker; the section alone (bridge:) means the host name as id (docs/fleet.md).",
                keys: ["id", "handover_after", "unreachable_after"], [
            "id": .object([
                ("description", "This bridge's id, a topic level unique in the fleet; default: the host name."),
                ("type", "string"),
                ("minLength", 1),
                ("pattern", "^[^+#/$\\u0000-\\u001f\\u007f-\\u009f]+$"),
                ("not", ["enum": .array(FleetSettings.reservedIDs.sorted().map { .string($0) })]),
            ]),
            "handover_after": seconds("Seconds a bridge must hear a device 10 dB stronger than its owner before asking for it.", default: 30),
            "unreachable_after": seconds("Seconds an owner may go without the device online before it reports it out of reach.", default: 60),
        ])
    }

    private static var adverts: JSONValue {
        section("Passive broadcasts: sensors that only advertise their readings (docs/adverts.md).",
                keys: ConfigValidator.advertsKeys, [
            "enabled": boolean("Listen for broadcasts (continuous scanning on every adapter).", default: false),
            "auto": .object([
                ("description", "Broadcasters in these formats are published even when no device names them, as <format>-<address>."),
                ("type", ["array", "null"]),
                ("uniqueItems", true),
                ("items", ["enum": .array(AdvertFormat.allCases.map { .string($0.rawValue) })]),
            ]),
            "auto_limit": integer("At most this many unsaved broadcasters are tracked.", ConfigValidator.autoLimitRange,
                                  default: AdvertSettings.defaultAutoLimit),
            "timeout": seconds("Seconds without a broadcast after which a passive device is offline.",
                               default: Int(AdvertSettings.defaultTimeout.components.seconds)),
        ])
    }

    private static var web: JSONValue {
        section("The page served to a browser (docs/web.md).", keys: ConfigValidator.webKeys, [
            "enabled": boolean("Serve the page.", default: true),
            "listen": .object([
                ("description", "HOST:PORT or [IPv6]:PORT; any address but loopback needs password_file."),
                ("type", "string"),
                ("default", "127.0.0.1:8780"),
                ("minLength", 1),
            ]),
            "password_file": string("A file whose first line is the page's password; relative to the config file's directory."),
            "public_url": .object([
                ("description", "Where people reach the page (http:// or https://); Home Assistant links each device to its page there."),
                ("type", "string"),
                ("pattern", "^[Hh][Tt][Tt][Pp][Ss]?://"),
            ]),
        ])
    }

    private static var esphomeProxy: JSONValue {
        var schema = section("The ESPHome API server through which Home Assistant uses the adapters as a Bluetooth proxy (docs/configuration.md#esphome_proxy).",
                keys: ConfigValidator.esphomeProxyKeys, [
            "enabled": boolean("Serve the ESPHome API.", default: false),
            "listen": .object([
                ("description", "HOST:PORT or [IPv6]:PORT; encryption: false only on a loopback address."),
                ("type", "string"),
                ("default", .string(ESPHomeProxySettings.defaultListen.description)),
                ("minLength", 1),
            ]),
            "name": .object([
                ("description", "The node name Home Assistant shows; default: bridge.id lowercased, other characters than a-z 0-9 - made -, at most 31."),
                ("type", "string"),
                ("pattern", .string("^[a-z0-9-]{1,\(ESPHomeProxySettings.maximumNameLength)}$")),
            ]),
            "encryption": boolean("Noise encryption with the key; false (plaintext) only on a loopback listen address.", default: true),
            "encryption_key_file": string("A file holding the key (32 bytes in base64), relative to the config file's directory; default: <state_dir>/esphome-proxy.key, created on the first start."),
            "connection_slots": integer("How many peripherals Home Assistant may connect through the proxy at once.",
                                        ESPHomeProxySettings.connectionSlotsRange,
                                        default: ESPHomeProxySettings.defaultConnectionSlots),
            "passkeys": .object([
                ("description", "Bluetooth address: a file in secrets_dir holding the six-digit passkey for pairing that device through the proxy."),
                ("type", ["object", "null"]),
                ("propertyNames", ["pattern": "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"]),
                ("additionalProperties", ["type": "string", "minLength": 1]),
            ]),
        ])
        // Plaintext only on loopback (the default listen address is not).
        schema = adding(schema, ("if", .object([
            ("type", "object"),
            ("required", ["enabled", "encryption"]),
            ("properties", ["enabled": ["const": true], "encryption": ["const": false]]),
        ])))
        schema = adding(schema, ("then", .object([
            ("required", ["listen"]),
            ("properties", ["listen": ["pattern": "^(127\\.|localhost:|\\[::1\\]:)"]]),
        ])))
        return schema
    }

    private static var device: JSONValue {
        var schema = section("One peripheral (docs/configuration.md#devices).",
                             keys: ConfigValidator.deviceKeys + ConfigValidator.optionalDeviceKeys + ConfigValidator.pairingKeys
                                + ConfigValidator.advertDeviceKeys, [
            "name": .object([
                ("description", "The device's topic level D; unique."),
                ("type", "string"),
                ("minLength", 1),
                ("not", ["enum": .array(ConfigValidator.reservedDeviceLevels.sorted().map { .string($0) })]),
            ]),
            "address": .object([
                ("description", "The Bluetooth address (the identity address for a bonded device with a private address)."),
                ("type", "string"),
                ("pattern", "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"),
            ]),
            "channels": .object([("type", "array"), ("items", ["$ref": "#/$defs/channel"])]),
            "adapter": .object([
                ("description", "hciN pins the device to that adapter; any lets the bridge choose."),
                ("default", "any"),
                ("anyOf", [["const": "any"], ["$ref": "#/$defs/adapterName"]]),
            ]),
            "pairing": .object([
                ("description", "Pair and bond before connecting (docs/pairing.md)."),
                ("enum", .array(PairingMode.allCases.map { .string($0.rawValue) })),
                ("default", .string(PairingMode.none.rawValue)),
            ]),
            "passkey": .object([
                ("description", "The six-digit passkey, inline (accepted with a warning; passkey_file is preferred)."),
                ("anyOf", [["type": "string", "pattern": "^[0-9]{6}$"], ["type": "integer", "minimum": 100000, "maximum": 999999]]),
            ]),
            "passkey_file": string("A file holding the six-digit passkey, relative to the config file's directory."),
            "advert": .object([
                ("description", "Decode the device's broadcasts in this format (auto: whichever decodes); without channels the device is passive and never connected."),
                ("enum", .array((["auto"] + ConfigValidator.formatNames).map { .string($0) })),
            ]),
            "bindkey": .object([
                ("description", "The 16-byte key of an encrypted BTHome or Xiaomi device as 32 hex digits, inline (accepted with a warning; bindkey_file is preferred)."),
                ("type", "string"),
                ("pattern", "^\\s*[0-9A-Fa-f]{32}\\s*$"),
            ]),
            "bindkey_file": string("A file holding the bindkey (32 hex digits), relative to the config file's directory."),
            "allow_plaintext": boolean("Read a keyed Xiaomi device's plaintext frames too (firmwares that send some objects unencrypted); off, anyone could forge them.", default: false),
        ], exclusive: [["passkey", "passkey_file"], ["bindkey", "bindkey_file"]])
        schema = adding(schema, ("required", .array(ConfigValidator.deviceKeys.filter { $0 != "channels" }.map { .string($0) })))
        // A passive device (advert) needs no channels; a key needs advert.
        schema = adding(schema, ("anyOf", [["required": ["channels"]], ["required": ["advert"]]]))
        schema = adding(schema, ("dependentRequired", ["bindkey": ["advert"], "bindkey_file": ["advert"]]))
        // A bindkey only with a format that has encrypted broadcasts (or auto).
        let plain = AdvertFormat.allCases.filter { !ConfigValidator.encryptedFormats.contains($0) }
        schema = adding(schema, ("if", .object([
            ("required", ["advert"]),
            ("properties", ["advert": ["enum": .array(plain.map { .string($0.rawValue) })]]),
        ])))
        schema = adding(schema, ("then", ["not": ["anyOf": [["required": ["bindkey"]], ["required": ["bindkey_file"]]]]]))
        return schema
    }

    private static var channel: JSONValue {
        var schema = section("One characteristic of a device (docs/configuration.md#channels).", keys: ConfigValidator.channelKeys, [
            "name": .object([("description", "The channel's topic level C (unless topic is set)."), ("type", "string"), ("minLength", 1)]),
            "characteristic": .object([
                ("description", "A characteristic UUID, 16-bit (\"2a37\") or 128-bit, optionally with its service: \"180d/2a37\"."),
                ("type", "string"),
                ("pattern", .string("^(\(uuidPattern)/)?\(uuidPattern)$")),
            ]),
            "codec": .object([
                ("description", "How bytes become payloads (docs/configuration.md#codecs)."),
                ("enum", .array(CodecKind.allCases.map { .string($0.rawValue) })),
            ]),
            "mode": .object([
                ("description", "notify, or read (polled every interval); default: notify if the characteristic can notify or indicate, else read."),
                ("enum", .array(ChannelMode.allCases.map { .string($0.rawValue) })),
            ]),
            "interval": seconds("Seconds between reads in read mode.", default: 60),
            "retain": boolean("Publish the values retained.", default: false),
            "qos": integer("The MQTT QoS of the values.", 0...2, default: 1),
            "topic": .object([
                ("description", "Overrides the topic level C; not availability, rssi or owner (the bridge's own)."),
                ("type", "string"),
                ("minLength", 1),
                ("not", ["enum": .array(ConfigValidator.reservedChannelLevels.sorted().map { .string($0) })]),
            ]),
            "writable": boolean("Accept commands on B/D/C/set.", default: false),
            "write_with_response": boolean("Write with a write request; default: with response if the characteristic allows it."),
            "values": .object([
                ("description", "Payloads ⇄ values in the codec's form, e.g. {ON: \"01\", OFF: \"00\"}."),
                ("type", "object"),
                ("additionalProperties", ["type": ["string", "number", "boolean"]]),
            ]),
            "homeassistant": .object([
                ("description", "How Home Assistant shows the channel (docs/home-assistant.md)."),
                ("enum", .array(HomeAssistantComponent.allCases.map { .string($0.rawValue) })),
                ("default", .string(HomeAssistantComponent.sensor.rawValue)),
            ]),
            "command_ttl": seconds("Seconds a set waits for a disconnected device.", default: 30),
            "delimiter": string("Text codec: the line delimiter of notifications.", default: "\n"),
            "write_delimiter": string("Text codec: appended to each written line; default: delimiter."),
            "max_line": integer("Text codec: a longer line is published in pieces of this many bytes.", 1...1_048_576, default: 1024),
            "flush_after": seconds("Text codec: seconds after which a partial line is published.", default: 1),
        ])
        schema = adding(schema, ("required", ["name", "characteristic", "codec"]))
        return schema
    }

    /// What `BluetoothUUID(_:)` parses: 16-bit, 32-bit or 128-bit (with dashes at the canonical places or none),
    /// optionally after `0x`.
    private static let uuidPattern = "((0[xX])?([0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}|"
        + "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}))"

    // MARK: building blocks

    /// A mapping section: `null` is an empty mapping, unknown keys are refused, and the properties are exactly
    /// `keys` (the validator's list), in that order. `exclusive`: pairs of keys that may not be given together.
    private static func section(_ description: String, keys: [String], _ properties: [String: JSONValue],
                                exclusive: [[String]] = []) -> JSONValue {
        precondition(Set(keys) == Set(properties.keys), "schema properties \(properties.keys.sorted()) ≠ validator keys \(keys.sorted())")
        var members: [(String, JSONValue)] = []
        if !description.isEmpty { members.append(("description", .string(description))) }
        members.append(("type", ["object", "null"]))
        members.append(("additionalProperties", false))
        members.append(("properties", .object(keys.map { ($0, properties[$0]!) })))
        let refusals: [JSONValue] = exclusive.map { ["not": ["type": "object", "required": .array($0.map { .string($0) })]] }
        if refusals.count == 1, case .object(let only) = refusals[0] {
            members += only
        } else if !refusals.isEmpty {
            members.append(("allOf", .array(refusals)))
        }
        return .object(members)
    }

    private static func adding(_ schema: JSONValue, _ member: (String, JSONValue)) -> JSONValue {
        guard case .object(let members) = schema else { return schema }
        return .object(members + [member])
    }

    private static func string(_ description: String, default value: String? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [("description", .string(description)), ("type", "string")]
        if let value { members.append(("default", .string(value))) }
        return .object(members)
    }

    private static func boolean(_ description: String, default value: Bool? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [("description", .string(description)), ("type", "boolean")]
        if let value { members.append(("default", .bool(value))) }
        return .object(members)
    }

    private static func integer(_ description: String, _ range: ClosedRange<Int>, default value: Int? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [("description", .string(description)), ("type", "integer"),
                                              ("minimum", .int(range.lowerBound)), ("maximum", .int(range.upperBound))]
        if let value { members.append(("default", .int(value))) }
        return .object(members)
    }

    private static func seconds(_ description: String, default value: Int) -> JSONValue {
        .object([("description", .string(description)), ("$ref", "#/$defs/seconds"), ("default", .int(value))])
    }

    /// `base_topic`, `discovery_prefix`: non-empty levels, no wildcards or control characters, no leading `$`.
    private static func topicPrefix(_ description: String, default value: String?) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("description", .string(description)),
            ("type", "string"),
            ("pattern", "^(?!\\$)[^+#/\\u0000-\\u001f\\u007f-\\u009f]+(/[^+#/\\u0000-\\u001f\\u007f-\\u009f]+)*$"),
        ]
        if let value { members.append(("default", .string(value))) }
        return .object(members)
    }

    private static func write(_ value: JSONValue, indent: String, to out: inout String) {
        let inner = indent + "  "
        switch value {
        case .array(let elements) where !elements.isEmpty:
            out += "[\n"
            for (index, element) in elements.enumerated() {
                out += inner
                write(element, indent: inner, to: &out)
                out += index < elements.count - 1 ? ",\n" : "\n"
            }
            out += indent + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (index, member) in members.enumerated() {
                out += inner + JSONValue.string(member.0).serialized + ": "
                write(member.1, indent: inner, to: &out)
                out += index < members.count - 1 ? ",\n" : "\n"
            }
            out += indent + "}"
        default:
            out += value.serialized
        }
    }
}
