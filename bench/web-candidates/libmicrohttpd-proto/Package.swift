// swift-tools-version: 6.2
// Prototype for the web page's server (issue 43): Debian's libmicrohttpd, driven from one poll loop. Not part of the
// daemon. Needs libmicrohttpd-dev (build) and libmicrohttpd12 (run).
import PackageDescription

let package = Package(
    name: "mhd-proto",
    targets: [
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .executableTarget(name: "MHDProto", dependencies: ["CMicroHTTPD"]),
    ]
)
