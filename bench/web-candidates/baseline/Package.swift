// swift-tools-version: 6.2
// The floor the web-server prototypes are compared with: a Swift program with no server, asleep in poll. Not part of
// the daemon.
import PackageDescription

let package = Package(name: "baseline", targets: [.executableTarget(name: "Baseline")])
