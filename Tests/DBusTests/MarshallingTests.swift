import CDBus
import Glibc
import Testing
@testable import DBus

/// Encodes into a real libdbus message and decodes it back.
private func roundTrip(_ values: [DBusValue]) throws -> [DBusValue] {
    let message = try #require(dbus_message_new_signal("/test", "org.example.Test", "Values"))
    defer { dbus_message_unref(message) }
    try Marshalling.append(values, to: message)
    let signature = String(cString: dbus_message_get_signature(message))
    #expect(signature == values.map(\.signature).joined())
    return Marshalling.decodeBody(message)
}

@Suite struct MarshallingTests {
    @Test func basicTypesRoundTrip() throws {
        let values: [DBusValue] = [
            .byte(0xFE), .bool(true), .bool(false), .int16(-12345), .uint16(54321), .int32(-2_000_000_000),
            .uint32(4_000_000_000), .int64(.min), .uint64(.max), .double(-1.5e300), .string("grüße ✓"),
            .string(""), .objectPath("/org/bluez/hci0/dev_AA_BB"), .signature("a{sv}"),
        ]
        #expect(try roundTrip(values) == values)
    }

    @Test func arraysRoundTripIncludingEmptyOnes() throws {
        let values: [DBusValue] = [
            .bytes([1, 2, 3, 0, 255]), .bytes([]), .array("s", [.string("a"), .string("b")]), .array("s", []),
            .array("o", []), .array("ai", [.array("i", [.int32(1)]), .array("i", [])]),
            .array("(sv)", []), .array("a{sv}", []), .array("q", [.uint16(1), .uint16(65535)]),
        ]
        let decoded = try roundTrip(values)
        #expect(decoded == values)
        #expect(decoded[0].bytes == [1, 2, 3, 0, 255])
        #expect(decoded[1].bytes == [])
        // Built by hand as an array of bytes, it marshals the same and comes back as bytes.
        #expect(try roundTrip([.array("y", [.byte(4), .byte(5)])]) == [.byteArray([4, 5])])
    }

    @Test func dictionariesRoundTrip() throws {
        let properties = DBusValue.stringDict([
            "Name": .string("sensor"), "RSSI": .int16(-60), "UUIDs": .array("s", [.string("180d")]),
            "ManufacturerData": .dictionary(key: "q", value: "v", [DBusDictEntry(key: .uint16(0x004C), value: .variant(.bytes([1, 2])))]),
            "ServiceData": .dictionary(key: "s", value: "v", []),
        ])
        let managed = DBusValue.dictionary(key: "o", value: "a{sa{sv}}", [
            DBusDictEntry(key: .objectPath("/org/bluez/hci0"), value: .dictionary(key: "s", value: "a{sv}", [
                DBusDictEntry(key: .string("org.bluez.Adapter1"), value: properties),
                DBusDictEntry(key: .string("org.freedesktop.DBus.Introspectable"), value: .stringDict([:])),
            ])),
            DBusDictEntry(key: .objectPath("/"), value: .dictionary(key: "s", value: "a{sv}", [])),
        ])
        let qv = DBusValue.dictionary(key: "q", value: "v", [DBusDictEntry(key: .uint16(0xFFFF), value: .variant(.bytes([9])))])
        let values = [properties, managed, qv, .dictionary(key: "s", value: "a{sv}", [])]
        #expect(try roundTrip(values) == values)
        #expect(managed.signature == "a{oa{sa{sv}}}")
        #expect(qv.signature == "a{qv}")
    }

    @Test func structsAndNestedVariantsRoundTrip() throws {
        let values: [DBusValue] = [
            .structure([.string("x"), .uint32(7), .structure([.bool(true), .bytes([])])]),
            .variant(.variant(.variant(.int32(42)))),
            .variant(.array("v", [.variant(.string("deep")), .variant(.structure([.double(0.5)]))])),
            .array("(oa{sv})", [.structure([.objectPath("/a"), .stringDict(["k": .uint64(1)])])]),
        ]
        let decoded = try roundTrip(values)
        #expect(decoded == values)
        #expect(decoded[1].unwrapped == .int32(42))
        #expect(decoded[1].int == 42)
    }

    @Test func unixFDIsDuplicatedAndStillRefersToThePipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let decoded = try roundTrip([.unixFD(fds[1])])
        guard case .receivedFD(let holder)? = decoded.first, let owned = holder.take() else {
            Issue.record("no fd decoded: \(decoded)")
            return
        }
        let second = holder.take()
        let tookTwice = second != nil
        #expect(!tookTwice, "one owner only")
        let received = owned.rawValue
        #expect(received >= 0)
        #expect(received != fds[1])
        var byte: UInt8 = 0x5A
        #expect(write(received, &byte, 1) == 1)
        var readBack: UInt8 = 0
        #expect(read(fds[0], &readBack, 1) == 1)
        #expect(readBack == 0x5A)
    }

    @Test func aReceivedFDIsClosedExactlyOnceWhenNobodyTakesIt() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var received: Int32 = -1
        do {
            let decoded = try roundTrip([.unixFD(fds[1])])
            guard case .receivedFD(let holder)? = decoded.first else {
                Issue.record("no fd decoded: \(decoded)")
                return
            }
            received = holder.peek()
            let copy = decoded      // copies of the value share the one owner
            #expect(copy == decoded)
            #expect(fcntl(received, F_GETFD) != -1)
        }
        #expect(received >= 0)
        #expect(fcntl(received, F_GETFD) == -1, "closed with the last copy of the value")
    }

    @Test func anOwnedFDIsClosedUnlessTaken() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        do { _ = OwnedFD(fds[0]) }
        #expect(fcntl(fds[0], F_GETFD) == -1)
        let raw = OwnedFD(fds[1]).take()
        #expect(fcntl(raw, F_GETFD) != -1, "take() hands ownership over without closing")
        close(raw)
    }

    @Test func invalidValuesAreRejectedInsteadOfAborting() throws {
        let message = try #require(dbus_message_new_signal("/test", "org.example.Test", "Values"))
        defer { dbus_message_unref(message) }
        let invalid: [DBusValue] = [
            .objectPath("not/a/path"), .signature("a{"), .array("s", [.int32(1)]), .structure([]),
            .dictionary(key: "as", value: "v", []), .array("", []), .string("nul\0inside"),
            .dictionary(key: "s", value: "v", [DBusDictEntry(key: .string("k"), value: .string("not a variant"))]),
            .array("y", [.byte(1), .int32(2)]), .unixFD(-1), .structure([.objectPath("")]),
        ]
        for value in invalid {
            #expect(throws: DBusError.self) { try Marshalling.append([value], to: message) }
        }
        #expect(Marshalling.decodeBody(message).isEmpty)
    }

    @Test func decodesMessageHeaders() throws {
        let message = try #require(dbus_message_new_method_call("org.example.Dest", "/obj", "org.example.Iface", "Do"))
        defer { dbus_message_unref(message) }
        try Marshalling.append([.string("arg")], to: message)
        let decoded = Marshalling.decodeMessage(message)
        #expect(decoded.kind == .methodCall)
        #expect(decoded.destination == "org.example.Dest")
        #expect(decoded.path == "/obj")
        #expect(decoded.interface == "org.example.Iface")
        #expect(decoded.member == "Do")
        #expect(decoded.body == [.string("arg")])
    }
}
