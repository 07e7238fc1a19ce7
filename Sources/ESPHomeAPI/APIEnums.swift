// The api.proto enums a proxy's messages carry. Proto3 enums are open: a peer newer than this file may send a value
// not listed here, so each is a raw value with named constants rather than a Swift enum that would have to refuse it.

extension APIMessage {
    public struct DisconnectReason: RawRepresentable, Sendable, Equatable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let unspecified = Self(rawValue: 0)
        public static let provisioningClosed = Self(rawValue: 1)
    }

    public struct LogLevel: RawRepresentable, Sendable, Equatable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let none = Self(rawValue: 0)
        public static let error = Self(rawValue: 1)
        public static let warn = Self(rawValue: 2)
        public static let info = Self(rawValue: 3)
        public static let config = Self(rawValue: 4)
        public static let debug = Self(rawValue: 5)
        public static let verbose = Self(rawValue: 6)
        public static let veryVerbose = Self(rawValue: 7)
    }

    public struct BluetoothDeviceRequestType: RawRepresentable, Sendable, Equatable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// Version 1 of connecting: ESPHome removed it, clients of API 1.9 and later send the v3 kinds.
        public static let connect = Self(rawValue: 0)
        public static let disconnect = Self(rawValue: 1)
        public static let pair = Self(rawValue: 2)
        public static let unpair = Self(rawValue: 3)
        public static let connectV3WithCache = Self(rawValue: 4)
        public static let connectV3WithoutCache = Self(rawValue: 5)
        public static let clearCache = Self(rawValue: 6)
    }

    public struct BluetoothScannerState: RawRepresentable, Sendable, Equatable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let idle = Self(rawValue: 0)
        public static let starting = Self(rawValue: 1)
        public static let running = Self(rawValue: 2)
        public static let failed = Self(rawValue: 3)
        public static let stopping = Self(rawValue: 4)
        public static let stopped = Self(rawValue: 5)
    }

    public struct BluetoothScannerMode: RawRepresentable, Sendable, Equatable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let passive = Self(rawValue: 0)
        public static let active = Self(rawValue: 1)
    }
}
