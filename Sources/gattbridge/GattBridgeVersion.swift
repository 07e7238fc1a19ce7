/// The one place the version lives; `--version` and anything that reports the version read it from here, and so does
/// the Debian package (scripts/deb/version.sh reads this line, so keep it a plain string literal).
enum GattBridgeVersion {
    static let string = "0.1.0"
}
