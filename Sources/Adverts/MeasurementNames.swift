/// Naming rules shared by the decoders.
enum MeasurementNames {
    /// The reference parsers keep binary sensors and sensors apart, so both may be called "battery" (low battery
    /// and battery level), "moisture", "power" or "gas". gattbridge publishes all readings of a device side by side
    /// (one topic each), so a binary sensor whose name is also a sensor's gets `_binary` appended, always, whether
    /// or not the packet carries the sensor too: a topic's name never depends on its neighbours.
    static let sharedWithSensors: Set<String> = ["battery", "moisture", "power", "gas", "carbon_monoxide"]

    static func binary(_ name: String) -> String {
        sharedWithSensors.contains(name) ? name + "_binary" : name
    }
}
