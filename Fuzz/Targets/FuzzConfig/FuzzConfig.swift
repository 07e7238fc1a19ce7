import CMosquitto
import Codecs
@testable import Config
import FuzzSupport

#if canImport(Glibc)
import Glibc
#endif

/// The YAML config loader (libyaml parse tree + strict validation) on arbitrary text. It must never crash, every
/// problem must come back as an issue with a position inside the text, and an accepted config must satisfy the
/// invariants the bridge relies on.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = input.rest()
    let text = String(decoding: bytes, as: UTF8.self)
    let lineCount = yamlLineCount(text)
    // Whatever the text, its sanitised form is a topic level libmosquitto accepts (within MQTT's 65,535-byte topics).
    let level = sanitizeTopicLevel(text)
    require(level.utf8.count > 60_000 || libmosquittoAccepts("gattbridge/\(level)/x/set"),
            "sanitised level refused by libmosquitto: \(sanitizeTopicLevel(text).unicodeScalars.map { String($0.value, radix: 16) })")
    // The file path runs the same bytes through TextFile's checks (regular file, 1 MiB cap) first. Both read the
    // text under the file's name, so relative password_file paths resolve alike.
    let file = MemoryFile(bytes)
    let name = file?.path ?? "/etc/gattbridge/fuzz.yaml"
    let viaFile = file.map { (file: MemoryFile) -> Result<BridgeConfig, ConfigErrors> in
        do throws(ConfigErrors) { return .success(try ConfigLoader.load(path: file.path)) } catch { return .failure(error) }
    }
    let comparable = bytes.count <= TextFile.configLimit && String(validating: bytes, as: UTF8.self) != nil
    do {
        let config = try ConfigLoader.parse(text, file: name)
        if let viaFile, comparable {
            require(viaFile == .success(config), "loading the file disagrees with parsing its text")
        }
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
                let topic = "\(config.mqtt.baseTopic)/\(device.topicLevel)/\(channel.topicLevel)/set"
                require(libmosquittoAccepts(topic), "libmosquitto refuses the topic \(topic.debugDescription)")
                require(channel.maxLine > 0, "max_line \(channel.maxLine) accepted")
            }
        }
        require((1...65535).contains(config.mqtt.port), "port \(config.mqtt.port) accepted")
        _ = config.mqtt.description
    } catch {
        if let viaFile, comparable {
            require(viaFile == .failure(error), "loading the file disagrees with parsing its text")
        }
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

/// `mosquitto_validate_utf8` and `mosquitto_pub_topic_check`: what libmosquitto checks before it publishes.
private func libmosquittoAccepts(_ topic: String) -> Bool {
    topic.withCString { text in
        mosquitto_validate_utf8(text, Int32(strlen(text))) == Int32(MOSQ_ERR_SUCCESS.rawValue)
            && mosquitto_pub_topic_check(text) == Int32(MOSQ_ERR_SUCCESS.rawValue)
    }
}

/// The bytes as a regular file on tmpfs (/dev/shm, so no disk I/O), one path per process, rewritten for each input;
/// nil when it could not be written.
private struct MemoryFile {
    static let shared = "/dev/shm/gattbridge-fuzz-config-\(getpid()).yaml"
    let path = Self.shared

    init?(_ bytes: [UInt8]) {
        let fd = open(Self.shared, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else { return nil }
    }
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
