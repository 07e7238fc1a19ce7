/// What one broadcast said: measurements (named as the reference parser Home Assistant uses names them, in snake
/// case, with its units), events, and the counters the caller deduplicates with (`AdvertDeduplicator`).
public struct AdvertResult: Sendable, Equatable {
    public var format: AdvertFormat
    public var measurements: [Measurement]
    public var events: [AdvertEvent]
    /// The sender's packet number (BTHome packet id, Xiaomi frame counter, pvvx/atc counter, Ruuvi sequence number):
    /// repeats of one reading carry the same number.
    public var packetID: UInt32?
    public var encrypted: Bool
    /// The encryption counter of an encrypted broadcast: it must increase (see `AdvertDeduplicator`).
    public var encryptionCounter: UInt32?

    public init(format: AdvertFormat, measurements: [Measurement] = [], events: [AdvertEvent] = [],
                packetID: UInt32? = nil, encrypted: Bool = false, encryptionCounter: UInt32? = nil) {
        self.format = format
        self.measurements = measurements
        self.events = events
        self.packetID = packetID
        self.encrypted = encrypted
        self.encryptionCounter = encryptionCounter
    }

    /// The measurement of that name, if the broadcast carried it.
    public subscript(name: String) -> MeasurementValue? {
        measurements.first { $0.name == name }?.value
    }

    /// Adds a reading, or replaces the value and unit of one of the same name where it stands: a later object of a
    /// packet wins, as in the reference parsers' dictionaries. A float that is not a number or infinite (random
    /// bytes read as a float) is no reading: it is left out, where the references would pass NaN on; like any later
    /// object it still replaces an earlier reading of its name, which is then gone.
    mutating func set(_ name: String, _ value: MeasurementValue, unit: String? = nil) {
        if case .number(let number) = value, !number.isFinite {
            measurements.removeAll { $0.name == name }
            return
        }
        if let index = measurements.firstIndex(where: { $0.name == name }) {
            measurements[index] = Measurement(name, value, unit: unit)
        } else {
            measurements.append(Measurement(name, value, unit: unit))
        }
    }

    /// True when the broadcast carried nothing to publish.
    public var isEmpty: Bool { measurements.isEmpty && events.isEmpty && packetID == nil }
}

/// One named reading.
public struct Measurement: Sendable, Equatable {
    public var name: String
    public var value: MeasurementValue
    /// The unit as the reference parser spells it ("°C", "%", "hPa", "µS/cm"), nil for counts, texts and states.
    public var unit: String?

    public init(_ name: String, _ value: MeasurementValue, unit: String? = nil) {
        self.name = name
        self.value = value
        self.unit = unit
    }
}

/// A reading's value. Integers stay integers (counts, percentages of whole numbers) so they print without a
/// fraction; scaled readings are doubles already rounded to the format's resolution.
public enum MeasurementValue: Sendable, Equatable {
    case integer(Int64)
    case number(Double)
    /// A binary sensor: published as ON/OFF.
    case state(Bool)
    case text(String)
    /// Identity of a beacon (UUID, namespace, URL): not a reading, not published as one.
    case identity(String)

    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        case .state, .text, .identity: nil
        }
    }
}

/// A momentary happening (a button press, a dimmer turn): published, never retained.
public struct AdvertEvent: Sendable, Equatable {
    /// The reference parser's event key: "button", "button_2", "dimmer".
    public var name: String
    /// "press", "double_press", "long_press", "rotate_left", …
    public var type: String
    /// Dimmer turns: how many steps.
    public var steps: Int?
    /// BTHome commands: the manufacturer-specific arguments, in hex.
    public var arguments: String?

    public init(name: String, type: String, steps: Int? = nil, arguments: String? = nil) {
        self.name = name
        self.type = type
        self.steps = steps
        self.arguments = arguments
    }
}
