import Adverts
import Codecs
import Testing
@testable import Config

/// The schema is built from the validator's key lists and enums; these pin that link from the Swift side (the
/// agreement of schema and validator on real configs is `Tests/docs/test_config_schema.py`).
@Suite struct ConfigSchemaTests {
    private func schema() throws -> JSONValue { try JSONValue.parse(ConfigSchema.text) }

    private func keys(_ object: JSONValue?) -> Set<String> {
        Set(object?["properties"]?.objectValue?.map(\.0) ?? [])
    }

    private func strings(_ array: JSONValue?) -> [String] { array?.arrayValue?.compactMap(\.stringValue) ?? [] }

    @Test func isDraft202012AndParses() throws {
        let document = try schema()
        #expect(document["$schema"]?.stringValue == "https://json-schema.org/draft/2020-12/schema")
        #expect(ConfigSchema.text.hasSuffix("}\n"))
    }

    @Test func sectionsHaveTheValidatorsKeys() throws {
        let document = try schema()
        #expect(keys(document["properties"]?["mqtt"]) == Set(ConfigValidator.mqttKeys))
        #expect(keys(document["$defs"]?["channel"]) == Set(ConfigValidator.channelKeys))
        #expect(keys(document["$defs"]?["device"])
            == Set(ConfigValidator.deviceKeys + ConfigValidator.optionalDeviceKeys + ConfigValidator.pairingKeys
                   + ConfigValidator.advertDeviceKeys))
        #expect(keys(document["properties"]?["adverts"]) == Set(ConfigValidator.advertsKeys))
        #expect(keys(document) == Set(ConfigValidator.sectionKeys + ConfigValidator.bridgeKeys))
    }

    @Test func enumsAreTheValidatorsSpellings() throws {
        let channel = try schema()["$defs"]?["channel"]?["properties"]
        #expect(strings(channel?["codec"]?["enum"]) == CodecKind.allCases.map(\.rawValue))
        #expect(strings(channel?["mode"]?["enum"]) == ChannelMode.allCases.map(\.rawValue))
        #expect(strings(channel?["homeassistant"]?["enum"]) == HomeAssistantComponent.allCases.map(\.rawValue))
        let device = try schema()["$defs"]?["device"]?["properties"]
        #expect(strings(device?["pairing"]?["enum"]) == PairingMode.allCases.map(\.rawValue))
        #expect(strings(device?["advert"]?["enum"]) == ["auto"] + AdvertFormat.allCases.map(\.rawValue))
        let adverts = try schema()["properties"]?["adverts"]?["properties"]
        #expect(strings(adverts?["auto"]?["items"]?["enum"]) == AdvertFormat.allCases.map(\.rawValue))
    }

    @Test func requiredKeysAreTheValidators() throws {
        let defs = try schema()["$defs"]
        // channels, or advert for a passive device.
        #expect(strings(defs?["device"]?["required"]) + ["channels"] == ConfigValidator.deviceKeys)
        #expect(defs?["device"]?["anyOf"]?.arrayValue?.map { strings($0["required"]) } == [["channels"], ["advert"]])
        #expect(strings(defs?["channel"]?["required"]) == ["name", "characteristic", "codec"])
    }
}
