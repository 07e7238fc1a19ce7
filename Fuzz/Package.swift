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

/// A folder of Sources/Bridge as its target (../Package.swift's `bridgeLayer`).
func bridgeLayer(_ folder: String, _ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: dependencies, path: "Sources/Bridge/\(folder)")
}

func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: dependencies, path: "Targets/\(name)")
}

let package = Package(
    name: "gattbridge-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1"),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto"),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1"),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto"),
        .systemLibrary(name: "CProtobufC", pkgConfig: "libprotobuf-c"),
        .target(name: "CESPHomeProto", dependencies: ["CProtobufC"]),
        .target(name: "Durations"),
        .target(name: "DBus", dependencies: ["CDBus", "Durations"]),
        .target(name: "Bluetooth"),
        .target(name: "BlueZ", dependencies: ["DBus", "Bluetooth", "Durations", log]),
        .target(name: "Codecs"),
        .target(name: "Adverts", dependencies: ["CCrypto", "Bluetooth", "Codecs"]),
        .target(name: "Config", dependencies: ["CYAML", "Codecs", "Bluetooth", "Adverts"]),
        .target(name: "ESPHomeAPI", dependencies: ["CCrypto", "CESPHomeProto"]),
        .target(name: "MQTT", dependencies: ["CMosquitto", "Durations", log, deque]),
                // The bridge's layer targets as in ../Package.swift, through the Sources/Bridge symlink. No Bridge (Services)
        // target: no harness reaches the daemon's services.
        bridgeLayer("Model", "BridgeModel", ["Adverts", "BlueZ", "Bluetooth", "Codecs", "Config", "MQTT"]),
        bridgeLayer("Channels", "BridgeChannels", ["BridgeModel", "BlueZ", "Codecs", "Config", log]),
        bridgeLayer("Session", "BridgeSession", [
            "BridgeModel", "BridgeChannels", "BlueZ", "Bluetooth", "Codecs", "Config", "Durations", log,
        ]),
        bridgeLayer("Adapters", "BridgeAdapters", ["BridgeModel", "BridgeSession", "BlueZ", "Bluetooth", "Codecs", "Config"]),
        bridgeLayer("Tools", "BridgeTools", ["BridgeModel", "BridgeSession", "Adverts", "BlueZ", "Bluetooth", "Codecs"]),
        bridgeLayer("FeatureHost", "BridgeFeatureHost", ["BridgeModel", "BridgeSession", "BridgeAdapters", "Bluetooth", "Config", "MQTT"]),
        bridgeLayer("Fleet", "BridgeFleet", ["BridgeModel", "BridgeFeatureHost", "Codecs", "Config", "MQTT", log]),
        bridgeLayer("HomeAssistant", "BridgeHomeAssistant", [
            "BridgeModel", "BridgeChannels", "BridgeAdapters", "BridgeFeatureHost", "Bluetooth", "Codecs", "Config",
            "MQTT", log,
        ]),
        bridgeLayer("Adverts", "BridgeAdverts", [
            "BridgeModel", "BridgeFeatureHost", "BridgeHomeAssistant", "Adverts", "Bluetooth", "Codecs", "Config",
            "MQTT", log,
        ]),
        bridgeLayer("Features", "BridgeFeatures", [
            "BridgeModel", "BridgeSession", "BridgeAdapters", "BridgeTools", "BridgeFeatureHost", "BridgeFleet",
            "BridgeAdverts", "BlueZ", "Bluetooth", "Codecs", "Config", "Durations", "MQTT", log,
        ]),

        .target(name: "CFuzzer", path: "Targets/CFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzer"], path: "Targets/FuzzSupport"),
        fuzzer("FuzzCodecs", ["Codecs", "FuzzSupport"]),
        fuzzer("FuzzConfig", ["Config", "Codecs", "CMosquitto", "FuzzSupport"]),
        fuzzer("FuzzCommands", ["BridgeModel", "BridgeChannels", "BridgeSession", "BridgeFeatures", "Config", "Codecs", "FuzzSupport"]),
        fuzzer("FuzzBridgeRequest", ["BridgeModel", "Config", "Codecs", "Bluetooth", "FuzzSupport"]),
        fuzzer("FuzzDBus", ["DBus", "CDBus", "BlueZ", "FuzzSupport"]),
        .target(name: "AdvertsFuzzSupport", dependencies: ["Adverts", "FuzzSupport"], path: "Targets/AdvertsFuzzSupport"),
        fuzzer("FuzzBTHome", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzXiaomi", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzThermometerFirmware", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzGovee", ["Adverts", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzRuuvi", ["Adverts", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzBeacons", ["Adverts", "Bluetooth", "FuzzSupport", "AdvertsFuzzSupport"]),
        fuzzer("FuzzReplayLedger", ["Adverts", "FuzzSupport"]),
        fuzzer("FuzzESPHomeAPI", ["ESPHomeAPI", "FuzzSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
