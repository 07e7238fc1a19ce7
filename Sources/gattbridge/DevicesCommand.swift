import ArgumentParser
import Codecs
import Config
import Logging
import MQTT

#if canImport(Glibc)
import Glibc
#endif

/// `gattbridge devices list|add|remove|rearm`: the bridge API (docs/bridge-api.md) of a running daemon, from a shell.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List, add, remove or re-arm the devices of a running daemon (over MQTT, through its bridge API).",
        subcommands: [DevicesListCommand.self, DevicesAddCommand.self, DevicesRemoveCommand.self,
                      DevicesRearmCommand.self]
    )
}

/// Where the daemon is: its config file gives the broker and the base topic.
struct BridgeAPIOptions: ParsableArguments {
    @Option(help: "The daemon's config file (broker and base topic).")
    var config: String = ConfigCheckCommand.defaultPath

    @Option(help: "Seconds to wait for the broker and for the daemon's answer.")
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }
}

struct DevicesListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print the daemon's devices.")

    @OptionGroup var api: BridgeAPIOptions

    @Flag(help: "Print the JSON array of bridge/devices.")
    var json = false

    func run() async throws {
        let data = try await BridgeAPICall.call(api, verb: "devices", body: [])
        if json {
            Terminal.out(data.serialized + "\n")
            return
        }
        let rows = (data.arrayValue ?? []).map { device in
            [device["name"]?.stringValue ?? "-", device["address"]?.stringValue ?? "-",
             device["source"]?.stringValue ?? "-", device["state"]?.stringValue ?? "-",
             (device["channels"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }.joined(separator: ", ")]
        }
        Terminal.out(TextTable.render(header: ["NAME", "ADDRESS", "SOURCE", "STATE", "CHANNELS"], rows: rows,
                                      rightAligned: []).joined(separator: "\n") + "\n")
    }
}

struct DevicesAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a device: starts it at once and saves it in the daemon's state directory.",
        discussion: "The device is a JSON object with the keys of a devices: entry, or --file with one in YAML or JSON."
    )

    @OptionGroup var api: BridgeAPIOptions

    @Argument(help: "The device as a JSON object.")
    var device: String?

    @Option(help: "A file holding the device (YAML or JSON).")
    var file: String?

    func validate() throws {
        guard (device == nil) != (file == nil) else { throw ValidationError("give the device as JSON or --file, not both or neither") }
    }

    func run() async throws {
        let object: JSONValue
        if let file {
            guard let text = readText(file) else { throw CLIFailure(ExitStatus.dataError, "cannot read \(file)") }
            do throws(ConfigErrors) {
                object = try ConfigLoader.deviceJSON(yaml: text, file: file)
            } catch {
                throw CLIFailure(ExitStatus.dataError, error.description)
            }
        } else {
            do throws(CodecError) {
                object = try JSONValue.parse(device ?? "")
            } catch {
                throw CLIFailure(ExitStatus.dataError, "the device is not valid JSON: \(error.message)")
            }
        }
        guard let members = object.objectValue else { throw CLIFailure(ExitStatus.dataError, "the device must be a JSON object") }
        let saved = try await BridgeAPICall.call(api, verb: "device/add", body: members)
        Terminal.out("added \(saved["name"]?.stringValue ?? "device")\n")
    }

    private func readText(_ path: String) -> String? {
        guard let handle = fopen(path, "r") else { return nil }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, handle)
            if count == 0 { break }
            bytes += buffer[0..<count]
            if bytes.count > BridgeAPICall.maxFileBytes { return nil }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

struct DevicesRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a device added over the API (devices of the config file stay).")

    @OptionGroup var api: BridgeAPIOptions

    @Argument(help: "The device's name.")
    var name: String

    func run() async throws {
        _ = try await BridgeAPICall.call(api, verb: "device/remove", body: [("name", .string(name))])
        Terminal.out("removed \(name)\n")
    }
}

struct DevicesRearmCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rearm",
        abstract: "Believe an encrypted broadcaster's next counter (after a battery change reset it).",
        discussion: "The daemon refuses an encrypted broadcast whose counter is not above every one it accepted before (a replay); a device that counts from zero again is refused the same way until it is re-armed.")

    @OptionGroup var api: BridgeAPIOptions

    @Argument(help: "The device's name.")
    var name: String

    func run() async throws {
        _ = try await BridgeAPICall.call(api, verb: "device/rearm", body: [("name", .string(name))])
        Terminal.out("re-armed \(name)\n")
    }
}

/// One request to the daemon: publish on `B/bridge/request/<verb>` with a transaction of our own and wait for the
/// answer that echoes it on `B/bridge/response/<verb>` (works with MQTT 3.1.1 too).
enum BridgeAPICall {
    static let maxFileBytes = 64 * 1024

    private enum Outcome: Sendable {
        case answer(JSONValue)
        case brokerTimeout
        case answerTimeout
    }

    static func call(_ options: BridgeAPIOptions, verb: String, body: [(String, JSONValue)]) async throws(CLIFailure) -> JSONValue {
        let config: BridgeConfig
        do throws(ConfigErrors) {
            config = try ConfigLoader.load(path: options.config)
        } catch {
            throw CLIFailure(ExitStatus.configError, error.description)
        }
        var configuration = MQTTConfiguration(settings: config.mqtt)
        // Not the daemon: its own client id (a shared one would throw the daemon off the broker) and no will.
        configuration.clientID = "\(config.mqtt.clientID)-cli-\(getpid())"
        configuration.will = nil
        var logger = Logger(label: "gattbridge.devices")
        logger.logLevel = .warning      // the connection's progress is noise for a one-shot command
        let client: MQTTClient
        do {
            client = try MQTTClient(configuration: configuration, logger: logger)
        } catch {
            throw CLIFailure(ExitStatus.configError, "cannot set up the MQTT client: \(error)")
        }
        let base = config.mqtt.baseTopic
        let responseTopic = "\(base)/bridge/response/\(verb)"
        let transaction = JSONValue.string("cli-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        let request = JSONValue.object(body + [("transaction", transaction)]).serialized
        let states = client.connectionStates()
        let messages = client.messages
        client.subscribe(responseTopic)
        client.start()
        let timeout = Duration.milliseconds(Int64(options.timeout * 1000))
        let outcome = await withTaskGroup(of: Outcome?.self) { group -> Outcome in
            group.addTask {
                var connected = false
                for await state in states where state == .connected {
                    connected = true
                    break
                }
                guard connected else { return nil }
                _ = client.publish(topic: "\(base)/bridge/request/\(verb)", string: request, qos: .atLeastOnce)
                for await message in messages where message.topic == responseTopic {
                    guard let answer = try? JSONValue.parse(message.payloadString),
                          answer["transaction"] == transaction else { continue }
                    return .answer(answer)
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return client.isConnected ? .answerTimeout : .brokerTimeout
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .brokerTimeout
        }
        await client.shutdown()
        switch outcome {
        case .brokerTimeout:
            throw CLIFailure(ExitStatus.temporaryFailure,
                             "cannot reach the MQTT broker \(config.mqtt.host):\(config.mqtt.port) within \(options.timeout) s")
        case .answerTimeout:
            throw CLIFailure(ExitStatus.unavailable,
                             "no answer from a gattbridge daemon on \(base)/bridge/request/\(verb) within \(options.timeout) s (is it running, with bridge_api on?)")
        case .answer(let answer):
            guard answer["status"]?.stringValue == "ok" else {
                throw CLIFailure(ExitStatus.dataError, answer["error"]?.stringValue ?? "the daemon refused the request")
            }
            return answer["data"] ?? .null
        }
    }
}
