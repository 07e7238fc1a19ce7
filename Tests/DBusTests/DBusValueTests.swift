import Testing
@testable import DBus

@Suite struct DBusValueTests {
    @Test func signatures() {
        #expect(DBusValue.bytes([]).signature == "ay")
        #expect(DBusValue.stringDict([:]).signature == "a{sv}")
        #expect(DBusValue.structure([.string(""), .array("y", [])]).signature == "(say)")
        #expect(DBusValue.variant(.uint64(1)).signature == "v")
        #expect(DBusValue.unixFD(3).signature == "h")
    }

    @Test func accessorsLookThroughVariants() {
        #expect(DBusValue.variant(.variant(.objectPath("/x"))).string == "/x")
        #expect(DBusValue.variant(.bool(true)).bool == true)
        #expect(DBusValue.variant(.uint16(65535)).int == 65535)
        #expect(DBusValue.int64(-3).int == -3)
        #expect(DBusValue.uint64(.max).int == nil)
        #expect(DBusValue.string("1").int == nil)
        #expect(DBusValue.variant(.bytes([7, 8])).bytes == [7, 8])
        #expect(DBusValue.array("s", [.string("a")]).bytes == nil)
        #expect(DBusValue.variant(.array("s", [.string("a")])).array == [.string("a")])
    }

    /// `ay` is kept as bytes; an array of `.byte` values built by hand reads the same.
    @Test func byteArraysAreBytes() {
        #expect(DBusValue.bytes([1, 2]) == .byteArray([1, 2]))
        #expect(DBusValue.array("y", [.byte(1), .byte(2)]).bytes == [1, 2])
        #expect(DBusValue.byteArray([1, 2]).array == [.byte(1), .byte(2)])
        #expect(DBusValue.byteArray([]).signature == "ay")
    }

    @Test func stringDictSortsKeysAndStripsOneVariantLayer() {
        let dict = DBusValue.stringDict(["b": .int32(2), "a": .variant(.int32(1))])
        guard case .dictionary("s", "v", let entries) = dict else {
            Issue.record("not a dictionary")
            return
        }
        #expect(entries.map(\.key) == [.string("a"), .string("b")])
        #expect(dict.stringDict == ["a": .variant(.int32(1)), "b": .int32(2)])
        let plain = DBusValue.dictionary(key: "s", value: "s", [DBusDictEntry(key: .string("k"), value: .string("v"))])
        #expect(plain.stringDict == ["k": .string("v")])
        #expect(DBusValue.dictionary(key: "q", value: "v", []).stringDict == nil)
    }
}
