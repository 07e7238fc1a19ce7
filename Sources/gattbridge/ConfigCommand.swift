import ArgumentParser
import Config

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Work with the configuration file.",
        subcommands: [ConfigCheckCommand.self]
    )
}

struct ConfigCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a config: prints ok (exit 0), or every error as FILE:LINE:COLUMN: message on stderr (exit 78)."
    )

    static let defaultPath = "/etc/gattbridge/config.yaml"

    @Option(help: "The config file.")
    var config: String = ConfigCheckCommand.defaultPath

    func run() throws {
        do throws(ConfigErrors) {
            _ = try ConfigLoader.load(path: config)
        } catch {
            Terminal.err(error.issues.map { "\($0)\n" }.joined())
            throw ExitCode(ExitStatus.configError)
        }
        Terminal.out("ok\n")
    }
}
