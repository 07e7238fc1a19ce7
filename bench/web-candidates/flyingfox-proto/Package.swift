// swift-tools-version: 6.2
// Prototype for the web page's server (issue 43): FlyingFox. Not part of the daemon.
import PackageDescription

let package = Package(
    name: "ff-proto",
    dependencies: [
        .package(url: "https://github.com/swhitty/FlyingFox.git", exact: "0.27.1")
    ],
    targets: [
        .executableTarget(name: "FFProto", dependencies: [.product(name: "FlyingFox", package: "FlyingFox")])
    ]
)
