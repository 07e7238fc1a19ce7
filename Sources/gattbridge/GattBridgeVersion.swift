/// The one place the version lives; `--version` and anything that reports the version read it from here.
enum GattBridgeVersion {
    static let string = "0.1.0"
}
