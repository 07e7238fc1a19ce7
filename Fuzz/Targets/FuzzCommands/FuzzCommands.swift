@testable import BridgeChannels
@testable import BridgeFeatures
@testable import BridgeModel
@testable import BridgeSession
import Codecs
import Config
import FuzzSupport

/// MQTT command handling without a broker or a device: the topic is split (`BridgeTopics.parseCommand`), the device
/// and channel looked up as `BridgeCore.handle` does, the `set` payload encoded (`CommandEncoding.encode`) for the
/// channel it names or, failing that, for every writable channel, and text cut into MTU-sized writes (as
/// `CommandEncoding.chunks` does); a rejection becomes the JSON report published on `B/bridge/log`.
///
/// Input: MTU byte, topic (length-prefixed), payload (the rest).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommands(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mtu = Int(input.byte())
    let topic = String(decoding: input.chunk(), as: UTF8.self)
    let payload = input.rest()
    let topics = BridgeTopics(base: config.mqtt.baseTopic)

    guard let (deviceLevel, channelLevel, verb) = topics.parseCommand(topic) else {
        require(!isCommandTopic(topic, base: topics.base),
                "parseCommand refused a well-formed command topic \(topic.debugDescription)")
        for channel in writable { encode(payload, for: channel, mtu: mtu, topic: topic) }
        return 0
    }
    require("\(topics.base)/\(deviceLevel)/\(channelLevel)/\(verb.rawValue)" == topic,
            "parseCommand(\(topic.debugDescription)) split it into \(deviceLevel)|\(channelLevel)|\(verb)")
    guard let device = config.devices.first(where: { $0.topicLevel == deviceLevel }) else {
        report(topic: topic, message: "unknown device \(deviceLevel)")
        return 0
    }
    guard let channel = device.channels.first(where: { $0.topicLevel == channelLevel }) else {
        report(topic: topic, message: "unknown channel \(channelLevel) on device \(device.name)")
        return 0
    }
    if verb == .set {
        if channel.writable {
            require(topic == topics.set(device, channel), "set topic does not round-trip for \(channel.name)")
            encode(payload, for: channel, mtu: mtu, topic: topic)
        } else {
            report(topic: topic, message: "channel \(device.name)/\(channel.name) is not writable", payload: payload)
        }
    }
    return 0
}

/// `B/D/C/set|get` with exactly one level for D and C (which may be empty: the lookup rejects those).
private func isCommandTopic(_ topic: String, base: String) -> Bool {
    guard topic.hasPrefix(base + "/") else { return false }
    let levels = topic.dropFirst(base.count + 1).split(separator: "/", omittingEmptySubsequences: false)
    return levels.count == 3 && (levels[2] == "set" || levels[2] == "get")
}

private func encode(_ payload: [UInt8], for channel: ChannelConfig, mtu: Int, topic: String) {
    let bytes: [UInt8]
    do {
        bytes = try CommandEncoding.encode(payload, for: channel)
    } catch {
        require(!error.description.isEmpty, "empty rejection")
        report(topic: topic, message: error.description)
        return
    }
    let text = String(decoding: payload, as: UTF8.self)
    if channel.codecKind == .text {
        let expected = Array(channel.codec.mapCommand(text).utf8) + Array(channel.writeDelimiter.utf8)
        require(bytes == expected, "text command \(text.debugDescription) encoded as \(bytes)")
        // What CommandEncoding.write sends: MTU-sized pieces of exactly these bytes.
        let chunks = CommandEncoding.chunks(bytes, channel: channel, mtu: mtu == 0 ? nil : mtu)
        require(chunks.flatMap { $0 } == bytes, "text command chunks lose bytes")
    } else {
        require(bytes == (try? channel.codec.encode(text)), "\(channel.name): encode disagrees with the codec")
    }
}

/// The `B/bridge/log` payload (EventLogFeature.rejectionReport) must stay valid JSON for any topic, message and
/// payload, carry no control character (a forged journal line), and stay small whatever the payload's size.
private func report(topic: String, message: String, payload: [UInt8]? = nil) {
    let report = EventLogFeature.rejectionReport(CommandRejection(topic: topic, reason: message, payload: payload))
    guard let parsed = try? JSONValue.parse(report.json) else {
        fatalError("rejection report is not JSON: \(report.json.debugDescription)")
    }
    require(parsed["topic"]?.stringValue == report.topic && parsed["message"]?.stringValue == report.message,
            "rejection report does not carry the topic and message back")
    for text in [report.message, report.topic] {
        require(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) || $0 == "\u{2028}" },
                "control character in a report: \(text.debugDescription)")
    }
    // Each escaped byte of the original takes at most 4 (\xNN) and the cut keeps 512 + 64 + 256 of them.
    require(report.message.utf8.count <= 4 * (512 + 64) + 64 && report.topic.utf8.count <= 4 * 256 + 8,
            "report too long: \(report.message.utf8.count) bytes")
}

/// One device per interesting codec, every channel writable (loaded through the real config loader).
private let config: BridgeConfig = {
    let yaml = """
    mqtt: { base_topic: "home/ble" }
    devices:
      - name: strap
        address: "C0:FF:EE:00:00:01"
        channels:
          - { name: heart_rate, characteristic: "2a37", codec: heart_rate_measurement }
          - { name: battery, characteristic: "180f/2a19", codec: battery_level, mode: read }
      - name: hm10
        address: "C0:FF:EE:00:00:02"
        channels:
          - { name: serial, characteristic: "ffe0/ffe1", codec: text, writable: true, write_with_response: false }
          - { name: mapped, characteristic: "ffe0/ffe2", codec: text, writable: true, delimiter: "\\r\\n",
              values: { PING: "AT" } }
          - { name: raw, characteristic: "ffe0/ffe3", codec: text, writable: true, delimiter: "" }
      - name: desk-led
        address: "C0:FF:EE:00:00:03"
        channels:
          - { name: led, characteristic: "c0ffee00-1ed0-4c7a-9b1e-000000000002", codec: hex, writable: true,
              values: { "ON": "01", "OFF": "00" }, homeassistant: switch }
          - { name: b64, characteristic: "fff1", codec: base64, writable: true }
          - { name: u8, characteristic: "fff2", codec: uint8, writable: true }
          - { name: i16be, characteristic: "fff3", codec: int16be, writable: true }
          - { name: u32, characteristic: "fff4", codec: uint32, writable: true }
          - { name: f32, characteristic: "fff5", codec: float32, writable: true }
          - { name: f64be, characteristic: "fff6", codec: float64be, writable: true }
          - { name: flag, characteristic: "fff7", codec: bool, writable: true, values: { "open": "true" } }
          - { name: i8, characteristic: "fff8", codec: int8, writable: true }
    """
    do {
        return try ConfigLoader.parse(yaml, file: "fuzz.yaml")
    } catch {
        fatalError("the harness config must load: \(error)")
    }
}()

private let writable: [ChannelConfig] = config.devices.flatMap { $0.channels }.filter(\.writable)

@_cdecl("FuzzCommands_main")
public func fuzzCommandsMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzCommands(data, size) })
}
