import Bluetooth

/// One advertisement as BlueZ reports it in `Device1`: the sender's address and local name, and the service data and
/// manufacturer data it carried. The decoders read nothing else.
public struct Broadcast: Sendable, Equatable {
    /// The sender's address; encrypted formats need it for their nonce, unless the frame carries it.
    public var address: BluetoothAddress?
    /// The advertised local name: some Govee models are told apart only by it.
    public var name: String?
    public var serviceData: [ServiceData]
    public var manufacturerData: [ManufacturerData]

    public struct ServiceData: Sendable, Equatable {
        public var uuid: BluetoothUUID
        public var bytes: [UInt8]
        public init(uuid: BluetoothUUID, bytes: [UInt8]) {
            self.uuid = uuid
            self.bytes = bytes
        }
    }

    public struct ManufacturerData: Sendable, Equatable {
        /// The Bluetooth SIG company identifier (0x0499 Ruuvi, 0x004C Apple, …).
        public var company: UInt16
        public var bytes: [UInt8]
        public init(company: UInt16, bytes: [UInt8]) {
            self.company = company
            self.bytes = bytes
        }
    }

    public init(address: BluetoothAddress? = nil, name: String? = nil, serviceData: [ServiceData] = [],
                manufacturerData: [ManufacturerData] = []) {
        self.address = address
        self.name = name
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
    }

    /// The service data of a 16-bit UUID, if present.
    public func serviceData(_ short: UInt16) -> [UInt8]? {
        let uuid = BluetoothUUID(short)
        return serviceData.first { $0.uuid == uuid }?.bytes
    }

    public func manufacturerData(_ company: UInt16) -> [UInt8]? {
        manufacturerData.first { $0.company == company }?.bytes
    }
}
