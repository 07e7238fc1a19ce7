/// The BTHome v2 object ids: what each carries, its length and scale, and the name and unit Home Assistant's
/// reference parser (bthome-ble 3.25.0) gives it. Generated from that parser's table; object ids absent here are
/// unknown, and an unknown id ends the parsing of a packet (its length is unknown, so nothing after it can be read).
enum BTHomeObjects {
    enum Kind: Equatable {
        /// A reading: `length` bytes little-endian, times `factor`.
        case sensor(name: String, unit: String?, length: Int, signed: Bool, factor: Double)
        case binary(name: String)
        /// Button, dimmer: `length` bytes, the first the event type.
        case event(name: String, length: Int)
        /// A command event: opcode and up to 31 bytes of arguments, length in the low 5 bits of a length byte.
        case command
        /// UTF-8 text or raw bytes, with a length byte.
        case text, raw
        /// Seconds since 1970, 4 bytes.
        case timestamp
        /// Device information (type id, firmware version): read past, not published.
        case deviceInfo(length: Int)
    }

    static func kind(_ id: UInt8) -> Kind? {
        switch id {
        case 0x00: .sensor(name: "packet_id", unit: nil, length: 1, signed: false, factor: 1.0)
        case 0x01: .sensor(name: "battery", unit: "%", length: 1, signed: false, factor: 1.0)
        case 0x02: .sensor(name: "temperature", unit: "°C", length: 2, signed: true, factor: 0.01)
        case 0x03: .sensor(name: "humidity", unit: "%", length: 2, signed: false, factor: 0.01)
        case 0x04: .sensor(name: "pressure", unit: "mbar", length: 3, signed: false, factor: 0.01)
        case 0x05: .sensor(name: "illuminance", unit: "lx", length: 3, signed: false, factor: 0.01)
        case 0x06: .sensor(name: "mass", unit: "kg", length: 2, signed: false, factor: 0.01)
        case 0x07: .sensor(name: "mass", unit: "lb", length: 2, signed: false, factor: 0.01)
        case 0x08: .sensor(name: "dew_point", unit: "°C", length: 2, signed: true, factor: 0.01)
        case 0x09: .sensor(name: "count", unit: nil, length: 1, signed: false, factor: 1.0)
        case 0x0A: .sensor(name: "energy", unit: "kWh", length: 3, signed: false, factor: 0.001)
        case 0x0B: .sensor(name: "power", unit: "W", length: 3, signed: false, factor: 0.01)
        case 0x0C: .sensor(name: "voltage", unit: "V", length: 2, signed: false, factor: 0.001)
        case 0x0D: .sensor(name: "pm25", unit: "µg/m³", length: 2, signed: false, factor: 1.0)
        case 0x0E: .sensor(name: "pm10", unit: "µg/m³", length: 2, signed: false, factor: 1.0)
        case 0x0F: .binary(name: "generic")
        case 0x10: .binary(name: "power")
        case 0x11: .binary(name: "opening")
        case 0x12: .sensor(name: "carbon_dioxide", unit: "ppm", length: 2, signed: false, factor: 1.0)
        case 0x13: .sensor(name: "volatile_organic_compounds", unit: "µg/m³", length: 2, signed: false, factor: 1.0)
        case 0x14: .sensor(name: "moisture", unit: "%", length: 2, signed: false, factor: 0.01)
        case 0x15: .binary(name: "battery")
        case 0x16: .binary(name: "battery_charging")
        case 0x17: .binary(name: "carbon_monoxide")
        case 0x18: .binary(name: "cold")
        case 0x19: .binary(name: "connectivity")
        case 0x1A: .binary(name: "door")
        case 0x1B: .binary(name: "garage_door")
        case 0x1C: .binary(name: "gas")
        case 0x1D: .binary(name: "heat")
        case 0x1E: .binary(name: "light")
        case 0x1F: .binary(name: "lock")
        case 0x20: .binary(name: "moisture")
        case 0x21: .binary(name: "motion")
        case 0x22: .binary(name: "moving")
        case 0x23: .binary(name: "occupancy")
        case 0x24: .binary(name: "plug")
        case 0x25: .binary(name: "presence")
        case 0x26: .binary(name: "problem")
        case 0x27: .binary(name: "running")
        case 0x28: .binary(name: "safety")
        case 0x29: .binary(name: "smoke")
        case 0x2A: .binary(name: "sound")
        case 0x2B: .binary(name: "tamper")
        case 0x2C: .binary(name: "vibration")
        case 0x2D: .binary(name: "window")
        case 0x2E: .sensor(name: "humidity", unit: "%", length: 1, signed: false, factor: 1.0)
        case 0x2F: .sensor(name: "moisture", unit: "%", length: 1, signed: false, factor: 1.0)
        case 0x3A: .event(name: "button", length: 1)
        case 0x3B: .command
        case 0x3C: .event(name: "dimmer", length: 2)
        case 0x3D: .sensor(name: "count", unit: nil, length: 2, signed: false, factor: 1.0)
        case 0x3E: .sensor(name: "count", unit: nil, length: 4, signed: false, factor: 1.0)
        case 0x3F: .sensor(name: "rotation", unit: "°", length: 2, signed: true, factor: 0.1)
        case 0x40: .sensor(name: "distance", unit: "mm", length: 2, signed: false, factor: 1.0)
        case 0x41: .sensor(name: "distance", unit: "m", length: 2, signed: false, factor: 0.1)
        case 0x42: .sensor(name: "duration", unit: "s", length: 3, signed: false, factor: 0.001)
        case 0x43: .sensor(name: "current", unit: "A", length: 2, signed: false, factor: 0.001)
        case 0x44: .sensor(name: "speed", unit: "m/s", length: 2, signed: false, factor: 0.01)
        case 0x45: .sensor(name: "temperature", unit: "°C", length: 2, signed: true, factor: 0.1)
        case 0x46: .sensor(name: "uv_index", unit: nil, length: 1, signed: false, factor: 0.1)
        case 0x47: .sensor(name: "volume", unit: "L", length: 2, signed: false, factor: 0.1)
        case 0x48: .sensor(name: "volume", unit: "mL", length: 2, signed: false, factor: 1.0)
        case 0x49: .sensor(name: "volume_flow_rate", unit: "m³/h", length: 2, signed: false, factor: 0.001)
        case 0x4A: .sensor(name: "voltage", unit: "V", length: 2, signed: false, factor: 0.1)
        case 0x4B: .sensor(name: "gas", unit: "m³", length: 3, signed: false, factor: 0.001)
        case 0x4C: .sensor(name: "gas", unit: "m³", length: 4, signed: false, factor: 0.001)
        case 0x4D: .sensor(name: "energy", unit: "kWh", length: 4, signed: false, factor: 0.001)
        case 0x4E: .sensor(name: "volume", unit: "L", length: 4, signed: false, factor: 0.001)
        case 0x4F: .sensor(name: "water", unit: "L", length: 4, signed: false, factor: 0.001)
        case 0x50: .timestamp
        case 0x51: .sensor(name: "acceleration", unit: "m/s²", length: 2, signed: false, factor: 0.001)
        case 0x52: .sensor(name: "gyroscope", unit: "°/s", length: 2, signed: false, factor: 0.001)
        case 0x53: .text
        case 0x54: .raw
        case 0x55: .sensor(name: "volume_storage", unit: "L", length: 4, signed: false, factor: 0.001)
        case 0x56: .sensor(name: "conductivity", unit: "µS/cm", length: 2, signed: false, factor: 1.0)
        case 0x57: .sensor(name: "temperature", unit: "°C", length: 1, signed: true, factor: 1.0)
        case 0x58: .sensor(name: "temperature", unit: "°C", length: 1, signed: true, factor: 0.35)
        case 0x59: .sensor(name: "count", unit: nil, length: 1, signed: true, factor: 1.0)
        case 0x5A: .sensor(name: "count", unit: nil, length: 2, signed: true, factor: 1.0)
        case 0x5B: .sensor(name: "count", unit: nil, length: 4, signed: true, factor: 1.0)
        case 0x5C: .sensor(name: "power", unit: "W", length: 4, signed: true, factor: 0.01)
        case 0x5D: .sensor(name: "current", unit: "A", length: 2, signed: true, factor: 0.001)
        case 0x5E: .sensor(name: "direction", unit: "°", length: 2, signed: false, factor: 0.01)
        case 0x5F: .sensor(name: "precipitation", unit: "mm", length: 2, signed: false, factor: 0.1)
        case 0x60: .sensor(name: "channel", unit: nil, length: 1, signed: false, factor: 1.0)
        case 0x61: .sensor(name: "rotational_speed", unit: "rpm", length: 2, signed: false, factor: 1.0)
        case 0x62: .sensor(name: "speed", unit: "m/s", length: 4, signed: true, factor: 0.000001)
        case 0x63: .sensor(name: "acceleration", unit: "m/s²", length: 4, signed: true, factor: 0.000001)
        case 0x64: .sensor(name: "light_level", unit: nil, length: 1, signed: false, factor: 1.0)
        case 0x65: .sensor(name: "settings_revision", unit: nil, length: 1, signed: false, factor: 1.0)
        case 0xF0: .deviceInfo(length: 2)
        case 0xF1: .deviceInfo(length: 4)
        case 0xF2: .deviceInfo(length: 3)
        default: nil
        }
    }

    static let buttonEvents: [UInt8: String] = [
        0x01: "press", 0x02: "double_press", 0x03: "triple_press", 0x04: "long_press", 0x05: "long_double_press",
        0x06: "long_triple_press", 0x80: "hold_press", 0x81: "hold_release",
    ]
    static let dimmerEvents: [UInt8: String] = [0x01: "rotate_left", 0x02: "rotate_right"]
    static let commandEvents: [UInt8: String] = [
        0x00: "off", 0x01: "on", 0x02: "toggle", 0x03: "step_up", 0x04: "step_down",
    ]
}
