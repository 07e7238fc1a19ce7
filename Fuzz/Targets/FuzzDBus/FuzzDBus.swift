import BlueZ
import CDBus
@testable import DBus
import FuzzSupport

/// D-Bus message parsing: bytes → libdbus (`dbus_message_demarshal`, which validates like a received message) →
/// `Marshalling.decodeMessage` → the signal payloads and BlueZ object records the daemon builds from them. Oracle: a
/// decoded body marshals again and decodes to the same values.
///
/// Input: selector byte. Even: the rest is a whole wire message. Odd: a signature (length-prefixed) and a body (the
/// rest) behind a header made here, naming one of the signals the daemon parses, so mutations reach the body decoder
/// instead of dying in header validation.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBus(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let selector = input.byte()
    let wire: [UInt8]
    if selector & 1 == 0 {
        wire = input.rest()
    } else {
        let signal = WrappedSignal.all[Int(selector >> 1) % WrappedSignal.all.count]
        let signature = input.chunk()
        wire = signal.message(signature: signature, body: input.rest())
    }
    guard !wire.isEmpty else { return 0 }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    let raw = wire.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error) }
    }
    guard let raw else {
        dbus_error_free(&error)
        return 0
    }
    defer { dbus_message_unref(raw) }
    let message = Marshalling.decodeMessage(raw)
    interpret(message)
    roundTrip(message.body)
    return 0
}

/// What BlueZClient and the ObjectManager mirror do with signals.
private func interpret(_ message: DBusMessage) {
    if let changed = PropertiesChanged(message) {
        record(path: changed.path, interface: changed.interface, properties: changed.changed)
    }
    if let added = InterfacesAdded(message) {
        for (interface, properties) in added.interfaces {
            record(path: added.objectPath, interface: interface, properties: properties)
        }
    }
    _ = InterfacesRemoved(message)
    _ = NameOwnerChanged(message)
    for value in message.body {
        _ = (value.string, value.bool, value.int, value.bytes, value.array, value.stringDict, value.signature)
        _ = BlueZError(DBusError(name: value.string ?? "", message: message.errorName ?? ""))
    }
}

private func record(path: String, interface: String, properties: [String: DBusValue]) {
    switch interface {
    case "org.bluez.Adapter1": _ = AdapterInfo(path: path, properties: properties)
    case "org.bluez.Device1": _ = DeviceInfo(path: path, properties: properties)
    case "org.bluez.GattService1": _ = GattServiceInfo(path: path, properties: properties)
    case "org.bluez.GattCharacteristic1": _ = GattCharacteristicInfo(path: path, properties: properties)
    case "org.bluez.GattDescriptor1": _ = GattDescriptorInfo(path: path, properties: properties)
    default:
        _ = AdapterInfo(path: path, properties: properties)
        _ = DeviceInfo(path: path, properties: properties)
        _ = GattCharacteristicInfo(path: path, properties: properties)
    }
}

/// Values that came out of a valid message are valid: they marshal again (the daemon's own append path) and read
/// back the same. Bodies with fds are left out, also inside variants (demarshalled messages carry no real fds, and
/// a received fd is taken once).
private func roundTrip(_ body: [DBusValue]) {
    guard !body.contains(where: carriesFD) else { return }
    guard let copy = dbus_message_new_signal("/fuzz", "org.gattbridge.Fuzz", "Copy") else { return }
    defer { dbus_message_unref(copy) }
    do {
        try Marshalling.append(body, to: copy)
    } catch {
        fatalError("a decoded body does not marshal again: \(error); body \(body)")
    }
    let again = Marshalling.decodeBody(copy)
    require("\(again)" == "\(body)", "body changed on the round trip: \(body) → \(again)")
    let signature = dbus_message_get_signature(copy).map { String(cString: $0) } ?? ""
    require(signature == body.map(\.signature).joined(), "signature \(signature) for \(body.map(\.signature))")
}

private func carriesFD(_ value: DBusValue) -> Bool {
    switch value {
    case .unixFD, .receivedFD: true
    case .array(_, let items), .structure(let items): items.contains(where: carriesFD)
    case .dictionary(_, _, let entries): entries.contains { carriesFD($0.key) || carriesFD($0.value) }
    case .variant(let inner): carriesFD(inner)
    default: false
    }
}

/// A little-endian signal header around a fuzzed body.
private struct WrappedSignal {
    let path: String, interface: String, member: String

    static let all = [
        WrappedSignal(path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service000a/char000b",
                      interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged"),
        WrappedSignal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded"),
        WrappedSignal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved"),
        WrappedSignal(path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged"),
    ]

    func message(signature: [UInt8], body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "l"), 4, 0, 1]
        append32(UInt32(body.count), &out)
        append32(1, &out)                       // serial
        var fields: [UInt8] = []
        field(1, "o", Array(path.utf8), &fields, base: 16)
        field(2, "s", Array(interface.utf8), &fields, base: 16)
        field(3, "s", Array(member.utf8), &fields, base: 16)
        if !signature.isEmpty {
            pad(&fields, 8, base: 16)
            fields += [8, 1, UInt8(ascii: "g"), 0, UInt8(min(signature.count, 255))] + signature.prefix(255) + [0]
        }
        append32(UInt32(fields.count), &out)
        out += fields
        pad(&out, 8, base: 0)
        return out + body
    }

    private func field(_ code: UInt8, _ type: Character, _ value: [UInt8], _ out: inout [UInt8], base: Int) {
        pad(&out, 8, base: base)
        out += [code, 1, type.asciiValue!, 0]
        pad(&out, 4, base: base)
        append32(UInt32(value.count), &out)
        out += value + [0]
    }

    private func pad(_ out: inout [UInt8], _ alignment: Int, base: Int) {
        while (base + out.count) % alignment != 0 { out.append(0) }
    }

    private func append32(_ value: UInt32, _ out: inout [UInt8]) {
        out += [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }
}

@_cdecl("FuzzDBus_main")
public func fuzzDBusMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    runFuzzer(argc, argv, { data, size in fuzzDBus(data, size) })
}
