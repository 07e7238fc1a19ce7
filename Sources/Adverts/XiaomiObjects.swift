/// The MiBeacon objects of the common thermometers, hygrometers, plant sensors, motion, occupancy, light and door
/// sensors,
/// read as Home Assistant's reference parser (xiaomi-ble 1.21.2) reads them, model quirks included. An object of
/// the wrong length is skipped (after whatever the reference sets before it notices), like an unknown one.
enum XiaomiObjects {
    /// Object ids decoded here; others are skipped.
    static let known: Set<UInt16> = [
        0x0003, 0x000F, 0x1004, 0x1005, 0x1006, 0x1007, 0x1008, 0x1009, 0x100A, 0x100D, 0x1010, 0x1012, 0x1013, 0x1014,
        0x1015, 0x1017, 0x1018, 0x1019, 0x101B, 0x4801, 0x4802, 0x4803, 0x4804, 0x4805, 0x4806, 0x4808, 0x480C,
        0x4818, 0x484E, 0x4851, 0x4852, 0x4A01, 0x4A08, 0x4A0F, 0x4A12, 0x4A13, 0x4A1A, 0x5413,
        0x4C01, 0x4C02, 0x4C03, 0x4C08, 0x4E01,
    ]

    static func apply(_ id: UInt16, _ x: ArraySlice<UInt8>, model: String, to result: inout AdvertResult) {
        let x = Array(x)
        guard !x.isEmpty else { return }
        func sensor(_ name: String, _ value: MeasurementValue, _ unit: String?) { result.set(name, value, unit: unit) }
        func binary(_ name: String, _ value: Bool) { result.set(MeasurementNames.binary(name), .state(value)) }
        func temperature(_ value: Double) { sensor("temperature", .number(value), "°C") }
        func humidity(_ value: MeasurementValue) { sensor("humidity", value, "%") }
        func battery(_ value: UInt8) { sensor("battery", .integer(Int64(value)), "%") }
        func le(_ bytes: [UInt8]) -> UInt64 { ByteReading.unsignedLE(bytes) }
        func float32() -> Double? { x.count == 4 ? ByteReading.floatLE(x) : nil }
        func event(_ name: String, _ type: String) { result.events.append(AdvertEvent(name: name, type: type)) }
        switch id {
        case 0x0003:  // MUE4094RT: motion, never cleared, so an event as the reference makes it
            event("motion", "motion_detected")
        case 0x000F:  // motion, with light or illuminance on some models
            guard x.count == 3 else { return }
            let illuminance = le(x)
            binary("motion", true)
            if model == "MJYD02YL" || model == "RTCGQ02LM" {
                binary("light", illuminance >= 100)
            } else if model == "CGPR1" {
                sensor("illuminance", .integer(Int64(illuminance)), "lx")
            }
        case 0x1004:
            guard x.count == 2 else { return }
            temperature(Double(ByteReading.signedLE(x)) / 10)
        case 0x1005:  // power and temperature; the reference sets power before it finds a 1-byte object short
            binary("power", x[0] != 0)
            guard x.count >= 2 else { return }
            sensor("temperature", .integer(Int64(x[1])), "°C")
        case 0x1006:
            guard x.count == 2 else { return }
            let raw = le(x)
            // The reference truncates these two models' humidity to whole percent (their readings step jaggedly).
            let truncated = model == "LYWSD03MMC" || model == "MHO-C401"
            humidity(truncated ? .integer(Int64(raw / 10)) : .number(Double(raw) / 10))
        case 0x1007:
            guard x.count == 3 else { return }
            let illuminance = le(x)
            if model == "MJYD02YL" || model == "MCCGQ02HL" {
                binary("light", illuminance == 100)
            } else if model == "HHCCJCY01" || model == "GCLS002" {
                sensor("illuminance", .integer(Int64(illuminance)), "lx")
            }
        case 0x1008: sensor("moisture", .integer(Int64(x[0])), "%")
        case 0x1009:
            guard x.count == 2 else { return }
            sensor("conductivity", .integer(Int64(le(x))), "µS/cm")
        case 0x100A:
            let level = x[0]
            // The reference estimates the voltage from the level: one AAA cell in two models, a CR2032 otherwise.
            let volts = model == "LYWSDCGQ" || model == "CGDK3"
                ? 0.8 + (1.6 - 0.8) * (Double(level) / 100) : 2.2 + (3.1 - 2.2) * (Double(level) / 100)
            battery(level)
            sensor("voltage", .number(volts), "V")
        case 0x100D:
            guard x.count == 4 else { return }
            temperature(Double(ByteReading.signedLE(x[0..<2])) / 10)
            humidity(.number(Double(le(Array(x[2..<4]))) / 10))
        case 0x1010:
            guard x.count == 2 else { return }
            sensor("formaldehyde", .number(Double(le(x)) / 100), "mg/m³")
        case 0x1012: binary("power", x[0] != 0)
        case 0x1013: sensor("consumable", .integer(Int64(x[0])), "%")
        case 0x1014: binary("moisture", x[0] > 0)
        case 0x1015: binary("smoke", x[0] > 0)
        case 0x1017:  // seconds without motion: 30 or less counts as motion, as in the Mi Home app
            guard x.count == 4 else { return }
            binary("motion", le(x) <= 30)
        case 0x1018: binary("light", x[0] != 0)
        case 0x1019:
            switch x[0] {
            case 0: binary("opening", true)
            case 1:
                binary("opening", false)
                binary("door_left_open", false)
            case 2:
                binary("opening", true)
                binary("door_left_open", true)
            default: return
            }
        case 0x101B: binary("motion", false)
        case 0x4801:
            guard let value = float32() else { return }
            temperature(DecimalRounding.round(value, places: 1))
        case 0x4802: humidity(.integer(Int64(x[0])))
        case 0x4803, 0x4C03: battery(x[0])
        case 0x4804, 0x4A12:  // opening state; MS1BB(MI) sends it as an event (0x4A12) beside the 0x4804 state
            if x[0] == 1 {
                binary("opening", true)
            } else if x[0] == 2 {
                binary("opening", false)
                binary("door_left_open", false)
                binary("device_forcibly_removed", false)
            }
        case 0x4805:
            guard let value = float32() else { return }
            sensor("illuminance", .number(value), "lx")
        case 0x4806:  // water: the flood sensors name it after where they sense it
            guard x.count == 1 else { return }
            binary(model == "SJWS02LM" || model == "zhiee.flood.sj01" ? "bottom_submersion" : "moisture", x[0] > 0)
        case 0x4808:
            guard let value = float32() else { return }
            humidity(.number(DecimalRounding.round(value, places: 1)))
        case 0x480C:
            guard x.count == 1 else { return }
            if x[0] == 0 { binary("opening", true) } else if x[0] == 1 { binary("opening", false) }
        case 0x4818:
            guard x.count == 2 else { return }
            binary("motion", le(x) <= 30)
        case 0x484E:  // occupancy; XMOSB01XS says 2 for a clear that the others say 0
            binary("occupancy", model == "XMOSB01XS" ? x[0] == 1 : x[0] > 0)
        case 0x4851: sensor("duration_detected", .integer(Int64(x[0])), "min")
        case 0x4852: sensor("duration_cleared", .integer(Int64(x[0])), "min")
        case 0x4A0F:  // forcibly removed: only the removal is said
            guard x[0] == 1 else { return }
            binary("opening", true)
            binary("device_forcibly_removed", true)
        case 0x4A13:  // MS1BB(MI)'s button
            if x[0] == 1 { event("button", "press") }
        case 0x4A1A:  // door left open
            guard x[0] == 1 else { return }
            binary("opening", true)
            binary("door_left_open", true)
        case 0x5413:  // ES5BB: occupancy at close range; other models use the id for something else
            guard model == "ES5BB" else { return }
            binary("occupancy_close_range", x[0] > 0)
        case 0x4A01, 0x4E01: binary("battery", x[0] != 0)
        case 0x4A08:
            guard let value = float32() else { return }
            binary("motion", true)
            sensor("illuminance", .number(value), "lx")
        case 0x4C01:
            guard let value = float32() else { return }
            temperature(DecimalRounding.round(value, places: 2))
        case 0x4C02:
            guard x.count == 1 else { return }
            humidity(.integer(Int64(x[0])))
        case 0x4C08:
            guard let value = float32() else { return }
            humidity(.number(value))
        default: return
        }
    }
}
