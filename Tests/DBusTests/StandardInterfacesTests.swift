import Testing
@testable import DBus

@Suite struct StandardInterfacesTests {
    /// A tiny object server answering Properties and ObjectManager like BlueZ does.
    private func serve(_ server: DBusConnection) async {
        let properties: [String: DBusValue] = ["Name": .string("hci0"), "Powered": .bool(true), "Class": .uint32(0x1c)]
        await server.exportHandler(path: "/org/bluez/hci0") { message in
            switch (message.interface, message.member) {
            case ("org.freedesktop.DBus.Properties", "Get"):
                guard let name = message.body.last?.string, let value = properties[name] else {
                    return .error(DBusError(name: DBusError.invalidArgsName, message: "No such property"))
                }
                return .values([.variant(value)])
            case ("org.freedesktop.DBus.Properties", "GetAll"):
                return .values([.stringDict(properties)])
            case ("org.freedesktop.DBus.Properties", "Set"):
                return message.body.count == 3 && message.body[2] == .variant(.bool(false))
                    ? .values([]) : .error(.invalidArgs("unexpected Set \(message.body)"))
            default:
                return .error(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: ""))
            }
        }
        await server.exportHandler(path: "/") { message in
            guard message.member == "GetManagedObjects" else { return .error(.invalidArgs("")) }
            return .values([.dictionary(key: "o", value: "a{sa{sv}}", [
                DBusDictEntry(key: .objectPath("/org/bluez/hci0"), value: .dictionary(key: "s", value: "a{sv}", [
                    DBusDictEntry(key: .string("org.bluez.Adapter1"), value: .stringDict(properties)),
                ])),
            ])])
        }
    }

    @Test func propertiesAndManagedObjects() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        await serve(server)
        let destination = server.uniqueName
        #expect(try await client.getProperty(destination: destination, path: "/org/bluez/hci0",
                                             interface: "org.bluez.Adapter1", name: "Name") == .string("hci0"))
        try await client.setProperty(destination: destination, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
                                     name: "Powered", value: .bool(false))
        let all = try await client.getAllProperties(destination: destination, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        #expect(all["Powered"] == .bool(true))
        #expect(all["Class"]?.int == 0x1c)
        let objects = try await client.getManagedObjects(destination: destination, path: "/")
        #expect(objects["/org/bluez/hci0"]?["org.bluez.Adapter1"]?["Name"] == .string("hci0"))
        await #expect(throws: DBusError(name: DBusError.invalidArgsName, message: "No such property")) {
            _ = try await client.getProperty(destination: destination, path: "/org/bluez/hci0",
                                             interface: "org.bluez.Adapter1", name: "Missing")
        }
    }
}
