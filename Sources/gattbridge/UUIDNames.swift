import Bluetooth

/// How UUIDs are shown to people: with the SIG name when there is one.
enum UUIDNames {
    /// "Heart Rate (180d)", or the UUID alone when it has no known name.
    static func labelled(_ uuid: BluetoothUUID) -> String {
        guard let name = uuid.sigName else { return uuid.description }
        return "\(name) (\(uuid.description))"
    }
}
