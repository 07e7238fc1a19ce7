// swift-tools-version: 6.2
import PackageDescription

let log = Target.Dependency.product(name: "Logging", package: "swift-log")

/// A folder of Sources/Bridge as a target of its own.
func bridgeLayer(_ folder: String, _ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: dependencies, path: "Sources/Bridge/\(folder)")
}

let package = Package(
    name: "gattbridge",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "gattbridge", targets: ["gattbridge"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // C libraries, found through pkg-config.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // OpenSSL's libcrypto (libmosquitto links it already): AES-CCM for encrypted broadcasts.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // libmicrohttpd: the web page's server, driven by the D-Bus loop (docs/dev/web-server.md).
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // Duration conversions (seconds, milliseconds, text), shared by every module that talks to C or people.
        .target(name: "Durations"),
        // D-Bus transport: event loop thread, marshalling, method calls, signals.
        .target(name: "DBus", dependencies: ["CDBus", "Durations"]),
        // Bluetooth value types: addresses, UUIDs, SIG-assigned names.
        .target(name: "Bluetooth"),
        // BlueZ client: adapters, devices, GATT, typed errors, resync on bluetoothd restart.
        .target(name: "BlueZ", dependencies: ["DBus", "Bluetooth", "Durations", .product(name: "Logging", package: "swift-log")]),
        // Characteristic bytes <-> MQTT payloads, text framing, JSON writing.
        .target(name: "Codecs"),
        // YAML config: libyaml parse tree with positions, strict validation.
        .target(name: "Config", dependencies: ["CYAML", "Codecs", "Bluetooth", "Adverts"]),
        // MQTT client over libmosquitto: reconnect, resubscribe, offline buffer.
        .target(name: "MQTT", dependencies: [
            "CMosquitto", "Durations",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // HTTP/1.1 server over libmicrohttpd on a host's poll loop: complete requests to a handler, answers now or
        // later from any thread, Server-Sent Event streams with a bounded queue.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "Codecs", "LoopHosting"]),
        // The poll loop a server runs on (the D-Bus loop in the daemon, a thread of its own in tests), shared by the
        // web page's server and the ESPHome API's.
        .target(name: "LoopHosting"),
        // sd_notify, watchdog, journald-aware logging.
        .target(name: "Systemd", dependencies: ["CSystemd", .product(name: "Logging", package: "swift-log")]),
        // Broadcast decoders (BTHome, Xiaomi MiBeacon, pvvx/atc, Govee, RuuviTag, iBeacon, Eddystone): bytes in,
        // measurements out, no I/O.
        .target(name: "Adverts", dependencies: ["CCrypto", "Bluetooth", "Codecs"]),
        // ESPHome's native API as a Home Assistant Bluetooth proxy speaks it: the Noise handshake and transport,
        // frames and messages. Bytes in, bytes out; no I/O.
        .target(name: "ESPHomeAPI", dependencies: ["CCrypto"]),
        // The ESPHome API's TCP server: listening socket and client connections on a `LoopHost`, each connection's
        // bytes through `ESPHomeAPI`, bounded queues both ways.
        .target(name: "ESPHomeServer", dependencies: ["ESPHomeAPI", "LoopHosting"]),
        // mDNS announcements through avahi-daemon's D-Bus API (the ESPHome proxy's `_esphomelib._tcp`).
        .target(name: "Avahi", dependencies: ["DBus", log]),
        // The bridge, one target per layer of Sources/Bridge (docs/dev/ARCHITECTURE.md#layers), lowest first: the
        // compiler refuses a use up or across the layers. Cross-target names are `package`, not `public`.
        bridgeLayer("Model", "BridgeModel", ["Adverts", "BlueZ", "Bluetooth", "Codecs", "Config", "MQTT"]),
        bridgeLayer("Channels", "BridgeChannels", ["BridgeModel", "BlueZ", "Codecs", "Config", log]),
        bridgeLayer("Session", "BridgeSession", [
            "BridgeModel", "BridgeChannels", "BlueZ", "Bluetooth", "Codecs", "Config", "Durations", log,
        ]),
        bridgeLayer("Adapters", "BridgeAdapters", ["BridgeModel", "BridgeSession", "BlueZ", "Bluetooth", "Codecs", "Config"]),
        bridgeLayer("Tools", "BridgeTools", ["BridgeModel", "BridgeSession", "Adverts", "BlueZ", "Bluetooth", "Codecs"]),
        bridgeLayer("FeatureHost", "BridgeFeatureHost", [
            "BridgeModel", "BridgeSession", "BridgeAdapters", "Config", "MQTT",
        ]),
        bridgeLayer("Commands", "BridgeCommands", ["BridgeModel", "BridgeSession", "BridgeFeatureHost", "Config", "MQTT"]),
        bridgeLayer("Pairing", "BridgePairing", ["BridgeFeatureHost", "BlueZ", "Bluetooth", "Codecs", "Config", log]),
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
        bridgeLayer("Web", "BridgeWeb", [
            "BridgeModel", "BridgeFeatureHost", "BridgeFeatures", "Codecs", "Config", "HTTPServer", "LoopHosting", "MQTT",
            log,
        ]),
        // Not "BridgeCore": that is the type the folder is named after.
        bridgeLayer("Core", "BridgeCoreLayer", [
            "BridgeModel", "BridgeSession", "BridgeAdapters", "BridgeFeatureHost", "BridgeCommands", "BridgePairing",
            "BridgeFleet", "BridgeAdverts", "BlueZ", "Bluetooth", "Config", "MQTT", log,
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The daemon's services, and the module the executable imports.
        .target(name: "Bridge", dependencies: [
            "BridgeModel", "BridgeTools", "BridgeFeatureHost", "BridgePairing", "BridgeFleet", "BridgeHomeAssistant",
            "BridgeAdverts", "BridgeFeatures", "BridgeWeb", "BridgeCoreLayer",
            "BlueZ", "Config", "DBus", "HTTPServer", "LoopHosting", "MQTT", "Systemd", log,
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ], path: "Sources/Bridge/Services"),
        .executableTarget(name: "gattbridge", dependencies: [
            "Adverts", "Bridge", "BridgeTools", "BlueZ", "Bluetooth", "Codecs", "Config", "Systemd", "DBus", "Durations",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        .testTarget(name: "DurationsTests", dependencies: ["Durations"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus"]),
        .testTarget(name: "BluetoothTests", dependencies: ["Bluetooth"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBus"]),
        .testTarget(name: "CodecsTests", dependencies: ["Codecs"]),
        .testTarget(name: "ConfigTests", dependencies: ["Config", "CMosquitto"]),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "DBus"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "LoopHosting", "DBus"]),
        .testTarget(name: "SystemdTests", dependencies: ["Systemd"]),
        .testTarget(name: "ESPHomeAPITests", dependencies: ["ESPHomeAPI"]),
        .testTarget(name: "ESPHomeServerTests", dependencies: ["ESPHomeServer", "ESPHomeAPI", "LoopHosting"]),
        .testTarget(name: "AvahiTests", dependencies: ["Avahi", "DBus"]),
        .testTarget(name: "AdvertsTests", dependencies: ["Adverts", "Bluetooth", "Codecs"]),
        .testTarget(name: "BridgeTests", dependencies: [
            "Adverts", "Bridge", "BridgeModel", "BridgeChannels", "BridgeSession", "BridgeAdapters", "BridgeTools",
            "BridgeFeatureHost", "BridgeCommands", "BridgePairing", "BridgeFleet", "BridgeHomeAssistant", "BridgeAdverts",
            "BridgeFeatures", "BridgeWeb", "BridgeCoreLayer", "BlueZ", "Bluetooth", "Codecs", "Config", "DBus", "HTTPServer",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
