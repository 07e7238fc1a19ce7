/// What GATT Device Information (0x180A) told us about a device; absent fields are left out of the `device` block
/// rather than guessed.
public struct DeviceIdentity: Sendable, Equatable {
    public var model: String?
    public var manufacturer: String?

    public init(model: String? = nil, manufacturer: String? = nil) {
        self.model = model
        self.manufacturer = manufacturer
    }
}
