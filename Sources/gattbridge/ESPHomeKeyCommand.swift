import ArgumentParser
import Config

/// The proxy's key for Home Assistant's setup dialog (docs/configuration.md#esphome_proxy). Without `--new` it prints
/// the key the daemon uses, making `<state_dir>/esphome-proxy.key` as the daemon's first start would when there is
/// none yet, so the user can paste it before that start and the daemon then finds the same key.
struct ESPHomeKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "esphome-key",
        abstract: "Print the ESPHome proxy's encryption key (base64), the one Home Assistant asks for when adding the bridge.",
        discussion: "The key is esphome_proxy.encryption_key_file's, else <state_dir>/esphome-proxy.key, created (mode 0600) when missing just as the daemon would. --new prints a fresh random key and writes nothing: put it in a file and name it in encryption_key_file."
    )

    @Option(help: "The config file.")
    var config: String = ConfigCheckCommand.defaultPath

    @Flag(help: "Print a fresh random key instead; nothing is written.")
    var new = false

    func run() throws {
        if new {
            Terminal.out(ESPHomeProxyKey.random().base64 + "\n")
            return
        }
        let loaded: BridgeConfig
        do throws(ConfigErrors) {
            loaded = try ConfigLoader.load(path: config)
        } catch {
            Terminal.err(error.issues.map { "\($0)\n" }.joined())
            throw ExitCode(ExitStatus.configError)
        }
        let settings = loaded.esphomeProxy
        guard settings.encryption else {
            throw CLIFailure(ExitStatus.configError, "esphome_proxy.encryption is false in \(config): the proxy has no key")
        }
        let key: ESPHomeProxyKey?
        do throws(ESPHomeProxyKeyError) {
            key = try ESPHomeProxyKey.resolve(settings, stateDir: loaded.stateDir)
        } catch {
            throw CLIFailure(ExitStatus.configError, error.description)
        }
        if !settings.enabled {
            Terminal.err("gattbridge: note: esphome_proxy is not enabled in \(config); this key is used once it is\n")
        }
        if let key { Terminal.out(key.base64 + "\n") }
    }
}
