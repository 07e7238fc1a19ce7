// swift-tools-version: 6.2
// Prototype for the web page's server (issue 43): hummingbird 2 with hummingbird-websocket. Not part of the daemon.
import PackageDescription

let package = Package(
    name: "hb-proto",
    dependencies: [
        // No default traits: without "FullFoundation" (and "ConfigurationSupport") hummingbird uses FoundationEssentials only.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", exact: "2.8.1"),
    ],
    targets: [
        .executableTarget(
            name: "HBProto",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ]
        )
    ]
)
