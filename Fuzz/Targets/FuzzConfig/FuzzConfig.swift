import Codecs
import Config
import FuzzSupport

/// The YAML config loader (libyaml parse tree + strict validation) on arbitrary text. It must never crash, every
/// problem must come back as an issue with a position inside the text, and an accepted config must satisfy the
/// invariants the bridge relies on.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let text = String(decoding: input.rest(), as: UTF8.self)
    let lineCount = yamlLineCount(text)
    do {
        let config = try ConfigLoader.parse(text, file: "/etc/gattbridge/fuzz.yaml")
        var names = Set<String>()
        for device in config.devices {
            require(!device.channels.isEmpty, "device \(device.name) accepted without channels")
            require(names.insert(device.topicLevel).inserted, "two devices share topic level \(device.topicLevel)")
            require(device.topicLevel != "bridge", "device topic level 'bridge' accepted")
            var levels = Set<String>()
            for channel in device.channels {
                require(levels.insert(channel.topicLevel).inserted, "two channels share \(channel.topicLevel)")
                require(!channel.topicLevel.utf8.contains(where: { $0 == 0x2F || $0 == 0x2B || $0 == 0x23 || $0 < 0x20 }),
                        "unsanitised topic level \(channel.topicLevel.debugDescription)")
                require((0...2).contains(channel.qos), "qos \(channel.qos) accepted")
                require(channel.maxLine > 0, "max_line \(channel.maxLine) accepted")
            }
        }
        require((1...65535).contains(config.mqtt.port), "port \(config.mqtt.port) accepted")
        _ = config.mqtt.description
    } catch {
        require(!error.issues.isEmpty, "a failed load reported no issue")
        for issue in error.issues {
            require(issue.line >= 0 && issue.line <= lineCount + 1 && issue.column >= 0,
                    "issue outside the text (\(lineCount) lines): \(issue)")
            require(!issue.message.isEmpty, "issue without a message")
            _ = issue.description
        }
    }
    return 0
}

/// Lines as libyaml counts them: "\r\n", "\r", "\n", NEL, LS and PS each end one.
private func yamlLineCount(_ text: String) -> Int {
    var count = 1
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}": count += 1   // "\r\n" is one Character but two scalars
        default: break
        }
    }
    return count
}

@_cdecl("FuzzConfig_main")
public func fuzzConfigMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzConfig(data, size) })
}
