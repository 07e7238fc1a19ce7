// swift-tools-version: 6.2
// libFuzzer harnesses for gattbridge (see Fuzz/README.md). Built only through Fuzz/run.sh, which passes
// `-sanitize=fuzzer,address -parse-as-library` and a scratch path of its own (.build-fuzz).
//
// The main package exports no library products (only the executable), so this package cannot depend on it by path.
// Instead Sources/<Module> are symlinks to ../../Sources/<Module>: the very same files compile here, instrumented for
// coverage, in debug with testability on, so the harnesses reach internal entry points with `@testable import`
// (D-Bus message decoding from raw bytes, the bridge's `set` payload encoding).
import PackageDescription

let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let deque = Target.Dependency.product(name: "DequeModule", package: "swift-collections")

func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: dependencies, path: "Targets/\(name)")
}

let package = Package(
    name: "gattbridge-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1"),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto"),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd"),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1"),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto"),
        .target(name: "Durations"),
        .target(name: "DBus", dependencies: ["CDBus", "Durations"]),
        .target(name: "Bluetooth"),
        .target(name: "BlueZ", dependencies: ["DBus", "Bluetooth", "Durations", log]),
        .target(name: "Codecs"),
        .target(name: "Adverts", dependencies: ["CCrypto", "Bluetooth", "Codecs"]),
        .target(name: "Config", dependencies: ["CYAML", "Codecs", "Bluetooth", "Adverts"]),
        .target(name: "MQTT", dependencies: ["CMosquitto", "Durations", log, deque]),
        .target(name: "Systemd", dependencies: ["CSystemd", log]),
        .target(name: "Bridge", dependencies: [
            "Adverts", "BlueZ", "Bluetooth", "Codecs", "Config", "DBus", "Durations", "MQTT", "Systemd", log,
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),

        .target(name: "CFuzzer", path: "Targets/CFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzer"], path: "Targets/FuzzSupport"),
        fuzzer("FuzzCodecs", ["Codecs", "FuzzSupport"]),
        fuzzer("FuzzConfig", ["Config", "Codecs", "CMosquitto", "FuzzSupport"]),
        fuzzer("FuzzCommands", ["Bridge", "Config", "Codecs", "FuzzSupport"]),
        fuzzer("FuzzBridgeRequest", ["Bridge", "Config", "Codecs", "Bluetooth", "FuzzSupport"]),
        fuzzer("FuzzDBus", ["DBus", "CDBus", "BlueZ", "FuzzSupport"]),
        .target(name: "AdvertsFuzzSupport", dependencies: ["Adverts", "FuzzSupport"], path: "Targets/AdvertsFuzzSupport"),
        fuzzer("FuzzBTHome", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzXiaomi", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzThermometerFirmware", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzGovee", ["Adverts", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzRuuvi", ["Adverts", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzBeacons", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzReplayLedger", ["Adverts", "FuzzSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
