import ArgumentParser
import Config

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Work with the configuration file.",
        subcommands: [ConfigCheckCommand.self, ConfigSchemaCommand.self]
    )
}

struct ConfigCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a config and its drop-ins (<state_dir>/devices.d/*.yaml): prints ok (exit 0), or every error as FILE:LINE:COLUMN: message on stderr (exit 78).",
        discussion: "Settings that weaken security (tls.insecure, credentials sent without TLS, a password_file, key or passkey file others can read, an inline passkey or bindkey) and advert devices while adverts.enabled is false are warned about on stderr; the config is still ok."
    )

    static let defaultPath = "/etc/gattbridge/config.yaml"

    @Option(help: "The config file.")
    var config: String = ConfigCheckCommand.defaultPath

    /// Warnings (a valid config that weakens security) go to stderr and do not change the verdict: still `ok`, exit 0.
    func run() throws {
        let loaded: BridgeConfig
        do throws(ConfigErrors) {
            let withDropIns = try ConfigLoader.loadWithDropIns(path: config)
            guard withDropIns.skipped.isEmpty else { throw ConfigErrors(issues: withDropIns.skipped) }
            loaded = withDropIns.config
        } catch {
            Terminal.err(error.issues.map { "\($0)\n" }.joined())
            throw ExitCode(ExitStatus.configError)
        }
        Terminal.err(loaded.warnings(file: config).map { "\($0)\n" }.joined())
        Terminal.out("ok\n")
    }
}

/// The config's JSON Schema for editors (docs/configuration.md#editor-support); `config check` stays the verdict.
struct ConfigSchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the config file's JSON Schema (draft 2020-12), for editors that validate YAML as you type.",
        discussion: "Point the YAML language server at it with a first line in config.yaml: # yaml-language-server: $schema=<file>. Rules that span keys and files that must exist are checked by config check alone."
    )

    func run() throws {
        Terminal.out(ConfigSchema.text)
    }
}
