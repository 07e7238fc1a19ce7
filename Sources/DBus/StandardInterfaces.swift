/// org.freedesktop.DBus.Properties, ObjectManager, Peer and the bus's own name methods.
extension DBusConnection {
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The property's value with its variant layers stripped.
    public func getProperty(destination: String, path: String, interface: String, name: String,
                            timeout: Duration = .seconds(25)) async throws(DBusError) -> DBusValue {
        let body = try await call(destination: destination, path: path, interface: Self.propertiesInterface,
                                  member: "Get", body: [.string(interface), .string(name)], timeout: timeout)
        guard let value = body.first else { throw .unexpectedReply("Get", body) }
        return value.unwrapped
    }

    /// `value` is wrapped in a variant here.
    public func setProperty(destination: String, path: String, interface: String, name: String, value: DBusValue,
                            timeout: Duration = .seconds(25)) async throws(DBusError) {
        _ = try await call(destination: destination, path: path, interface: Self.propertiesInterface, member: "Set",
                           body: [.string(interface), .string(name), .variant(value)], timeout: timeout)
    }

    public func getAllProperties(destination: String, path: String, interface: String,
                                 timeout: Duration = .seconds(25)) async throws(DBusError) -> [String: DBusValue] {
        let body = try await call(destination: destination, path: path, interface: Self.propertiesInterface,
                                  member: "GetAll", body: [.string(interface)], timeout: timeout)
        guard let properties = body.first?.stringDict else { throw .unexpectedReply("GetAll", body) }
        return properties
    }

    /// path → interface → properties.
    public func getManagedObjects(destination: String, path: String,
                                  timeout: Duration = .seconds(25)) async throws(DBusError) -> [String: [String: [String: DBusValue]]] {
        let body = try await call(destination: destination, path: path, interface: "org.freedesktop.DBus.ObjectManager",
                                  member: "GetManagedObjects", timeout: timeout)
        guard case .dictionary("o", _, let entries)? = body.first else { throw .unexpectedReply("GetManagedObjects", body) }
        var result = [String: [String: [String: DBusValue]]](minimumCapacity: entries.count)
        for entry in entries {
            guard case .objectPath(let objectPath) = entry.key,
                  let interfaces = InterfacesAdded.interfaces(entry.value) else {
                throw .unexpectedReply("GetManagedObjects", body)
            }
            result[objectPath] = interfaces
        }
        return result
    }

    /// org.freedesktop.DBus.Peer.Ping on the bus itself: proves the loop, the socket and the daemon are alive.
    public func ping(timeout: Duration = .seconds(25)) async throws(DBusError) {
        // GetId rather than Peer.Ping: every client may call the bus's own interface, while Debian's stock system
        // bus policy refuses Peer.Ping, which would silence the watchdog on a machine without our policy file.
        _ = try await call(destination: Bus.name, path: Bus.path, interface: Bus.name, member: "GetId",
                           timeout: timeout)
    }

    /// The unique name owning `name`; nil when the name has no owner.
    public func getNameOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> String? {
        let body: [DBusValue]
        do throws(DBusError) {
            body = try await call(destination: Bus.name, path: Bus.path, interface: Bus.interface,
                                  member: "GetNameOwner", body: [.string(name)], timeout: timeout)
        } catch where error.name == DBusError.nameHasNoOwnerName {
            return nil
        }
        guard let owner = body.first?.string else { throw .unexpectedReply("GetNameOwner", body) }
        return owner
    }

    public func listNames(timeout: Duration = .seconds(25)) async throws(DBusError) -> [String] {
        let body = try await call(destination: Bus.name, path: Bus.path, interface: Bus.interface,
                                  member: "ListNames", timeout: timeout)
        guard let names = body.first?.array else { throw .unexpectedReply("ListNames", body) }
        return names.compactMap(\.string)
    }

    /// RequestName with DBUS_NAME_FLAG_DO_NOT_QUEUE; true when this connection became the primary owner.
    public func requestName(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let body = try await call(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "RequestName",
                                  body: [.string(name), .uint32(4)], timeout: timeout)
        guard case .uint32(let code)? = body.first else { throw .unexpectedReply("RequestName", body) }
        return code == 1 || code == 4   // primary owner, already owner
    }

    public func releaseName(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) {
        _ = try await call(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "ReleaseName",
                           body: [.string(name)], timeout: timeout)
    }
}
