import Adverts
import ArgumentParser
import Bluetooth
import Codecs
import Config

struct AdvertsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adverts",
        abstract: "Decode passive broadcasts (BTHome, Xiaomi, pvvx, atc, Govee, RuuviTag, iBeacon, Eddystone).",
        subcommands: [AdvertsDecodeCommand.self]
    )
}

struct AdvertsDecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode one broadcast and print it as one JSON object; exit 65 when nothing decodes.",
        discussion: """
            Prints {"format":…,"measurements":{…},"events":[…],"packet_id":N|null,"encrypted":true|false}. \
            A bindkey on the command line is visible to every user of the machine (ps, shell history): prefer \
            --bindkey-file, a file holding the 32 hex digits.
            """
    )

    @Option(help: "The sender's address (encrypted formats need it unless the frame carries it).",
            transform: AddressArgument.parse)
    var address: AddressArgument?

    @Option(help: "The advertised local name (some Govee models are told apart only by it).")
    var name: String?

    @Option(help: ArgumentHelp("The 16-byte key of an encrypted device, 32 hex digits (see --bindkey-file).",
                               valueName: "hex"))
    var bindkey: String?

    @Option(help: ArgumentHelp("A file holding the bindkey.", valueName: "path"))
    var bindkeyFile: String?

    @Option(help: ArgumentHelp("Decode only this format.", valueName: "format"),
            transform: AdvertsArguments.format)
    var format: AdvertFormat?

    @Option(help: ArgumentHelp("Service data: a UUID (fcd2 or 128-bit), '=', the bytes in hex.",
                               valueName: "uuid=hex"), transform: AdvertsArguments.serviceData)
    var serviceData: [Broadcast.ServiceData] = []

    @Option(help: ArgumentHelp("Manufacturer data: the company id (0x0499 or 1177), '=', the bytes in hex.",
                               valueName: "id=hex"), transform: AdvertsArguments.manufacturerData)
    var manufacturerData: [Broadcast.ManufacturerData] = []

    /// One broadcast per line on stdin, one answer per line on stdout: for the differential tests, which would
    /// otherwise start a process per packet.
    @Flag(help: .hidden)
    var batch = false

    func validate() throws {
        if bindkey != nil, bindkeyFile != nil { throw ValidationError("give --bindkey or --bindkey-file, not both") }
        if !batch, serviceData.isEmpty, manufacturerData.isEmpty {
            throw ValidationError("give at least one --service-data or --manufacturer-data")
        }
    }

    func run() throws {
        let key = try loadBindkey()
        if batch {
            AdvertsBatch.run(bindkey: key)
            return
        }
        let broadcast = Broadcast(address: address?.address, name: name, serviceData: serviceData,
                                  manufacturerData: manufacturerData)
        let formats = format.map { Set([$0]) } ?? Set(AdvertFormat.allCases)
        do throws(AdvertError) {
            let result = try AdvertDecoder.decode(broadcast, formats: formats, bindkey: key?.bytes)
            Terminal.out(result.json().serialized + "\n")
        } catch {
            throw CLIFailure(ExitStatus.dataError, "adverts decode: \(error)")
        }
    }

    private func loadBindkey() throws -> Bindkey? {
        if let bindkey {
            guard let key = Bindkey(hex: bindkey) else { throw CLIFailure.usage("--bindkey: expected 32 hex digits") }
            return key
        }
        guard let bindkeyFile else { return nil }
        switch TextFile.read(bindkeyFile, limit: TextFile.secretLimit) {
        case .failure(let error):
            throw CLIFailure(ExitStatus.usage, "--bindkey-file \(bindkeyFile): \(error)")
        case .success(let bytes):
            guard let key = Bindkey(hex: String(decoding: bytes, as: UTF8.self)) else {
                throw CLIFailure.usage("--bindkey-file \(bindkeyFile): expected 32 hex digits")
            }
            return key
        }
    }
}
