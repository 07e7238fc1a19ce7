import Bluetooth
import DBus

/// How `writeValue` writes.
public enum GattWriteType: String, Sendable {
    /// Write request: acknowledged by the peer.
    case request
    /// Write without response.
    case command
}

extension BlueZClient {
    public func gattTree(device path: String) -> GattTree {
        mirror.gattTree(device: path)
    }

    public func characteristic(path: String) -> GattCharacteristicInfo? {
        mirror.characteristic(path)
    }

    /// The first characteristic with `uuid` on the device (in handle order), optionally within a service `service`.
    public func findCharacteristic(device path: String, uuid: BluetoothUUID,
                                   service: BluetoothUUID? = nil) throws(BlueZError) -> GattCharacteristicInfo {
        guard mirror.device(path) != nil else { throw .deviceNotFound(path) }
        guard let found = mirror.gattTree(device: path).characteristic(uuid, service: service) else {
            throw .characteristicNotFound(service.map { "\($0)/\(uuid)" } ?? uuid.description)
        }
        return found
    }

    public func readValue(characteristic path: String, offset: Int = 0,
                          timeout: Duration = .seconds(10)) async throws(BlueZError) -> [UInt8] {
        try await readValue(path, interface: BlueZNames.gattCharacteristic, offset: offset, timeout: timeout)
    }

    public func readDescriptor(_ path: String, offset: Int = 0, timeout: Duration = .seconds(10)) async throws(BlueZError) -> [UInt8] {
        try await readValue(path, interface: BlueZNames.gattDescriptor, offset: offset, timeout: timeout)
    }

    public func writeDescriptor(_ path: String, _ value: [UInt8], timeout: Duration = .seconds(10)) async throws(BlueZError) {
        try await serialized(path) { () async throws(BlueZError) in
            _ = try await call(path, BlueZNames.gattDescriptor, "WriteValue", [.bytes(value), .stringDict([:])],
                               timeout: timeout, what: "writing \(path)")
        }
    }

    public func writeValue(characteristic path: String, _ value: [UInt8], type: GattWriteType = .request,
                           offset: Int = 0, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        var options: [String: DBusValue] = ["type": .string(type.rawValue)]
        if offset > 0 { options["offset"] = .uint16(UInt16(clamping: offset)) }
        try await serialized(path) { () async throws(BlueZError) in
            _ = try await call(path, BlueZNames.gattCharacteristic, "WriteValue", [.bytes(value), .stringDict(options)],
                               timeout: timeout, what: "writing \(path)")
        }
    }

    /// Subscribes to notifications/indications. With `preferAcquire` it tries `AcquireNotify` first (values then
    /// arrive on a socket, one `read()` each, no D-Bus traffic) and falls back to `StartNotify` when BlueZ or the
    /// peripheral refuses; BlueZ has no flag announcing AcquireNotify support, so trying is the only test.
    ///
    /// `onValue`, when given, takes the values synchronously on the D-Bus event-loop thread instead of `values`
    /// (saving the thread hops through the actor and the caller's task); it must be quick and must not block. Its
    /// bytes are lent (the socket's read buffer, libdbus's message), valid only during the call: no array per value.
    /// `values` then only finishes when the subscription ends. On the signal path the PropertiesChanged signals that
    /// carry only a value are consumed there and never reach the actor; others (rare) still update the mirror.
    public func subscribe(characteristic path: String, preferAcquire: Bool = true,
                          timeout: Duration = .seconds(10),
                          onValue: (@Sendable (UnsafeRawBufferPointer) -> Void)? = nil) async throws(BlueZError) -> NotificationSubscription {
        guard let info = mirror.characteristic(path) else { throw .characteristicNotFound(path) }
        if preferAcquire, info.notifyAcquired != true {
            do throws(BlueZError) {
                return try await acquireNotify(info, timeout: timeout, onValue: onValue)
            } catch let error where Self.fallsBackToStartNotify(error) {
                logger.debug("AcquireNotify refused, using StartNotify", metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        return try await startNotify(info, timeout: timeout, onValue: onValue)
    }

    static func fallsBackToStartNotify(_ error: BlueZError) -> Bool {
        switch error {
        case .notSupported, .unknownMethod, .failed, .notPermitted, .notPaired, .notifyAcquired, .other: true
        default: false
        }
    }

    private func readValue(_ path: String, interface: String, offset: Int, timeout: Duration) async throws(BlueZError) -> [UInt8] {
        var options: [String: DBusValue] = [:]
        if offset > 0 { options["offset"] = .uint16(UInt16(clamping: offset)) }
        let reply = try await serialized(path) { () async throws(BlueZError) in
            try await call(path, interface, "ReadValue", [.stringDict(options)], timeout: timeout, what: "reading \(path)")
        }
        guard let value = reply.first?.bytes else {
            throw .other(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "ReadValue reply without ay")
        }
        return value
    }

    private func acquireNotify(_ info: GattCharacteristicInfo, timeout: Duration,
                               onValue: (@Sendable (UnsafeRawBufferPointer) -> Void)?) async throws(BlueZError) -> NotificationSubscription {
        let path = info.path
        let reply = try await serialized(path) { () async throws(BlueZError) in
            try await call(path, BlueZNames.gattCharacteristic, "AcquireNotify", [.stringDict([:])],
                           timeout: timeout, what: "AcquireNotify on \(path)")
        }
        guard case .receivedFD(let received)? = reply.first?.unwrapped, let fd = received.take() else {
            throw .other(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "AcquireNotify reply without fd")
        }
        let mtu = reply.dropFirst().first?.int
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        let reader = FDNotificationReader(loop: connection.loop, fd: fd, mtu: mtu ?? 517, continuation: continuation,
                                           sink: onValue)
        continuation.onTermination = { _ in reader.stop() }
        reader.start()
        return NotificationSubscription(delivery: .fd, characteristicPath: path, mtu: mtu ?? info.mtu,
                                        values: values, deliversToSink: onValue != nil, onStop: { reader.stop() })
    }

    private func startNotify(_ info: GattCharacteristicInfo, timeout: Duration,
                             onValue: (@Sendable (UnsafeRawBufferPointer) -> Void)?) async throws(BlueZError) -> NotificationSubscription {
        let path = info.path
        let (values, continuation) = AsyncStream<[UInt8]>.makeStream()
        // Registered before StartNotify so the first value cannot slip past.
        var tap: SignalTap?
        if let onValue {
            let untapped = untappedPaths
            tap = await connection.tapProperty(sender: BlueZNames.service, path: path,
                                               interface: BlueZNames.gattCharacteristic, property: "Value") { value, alone in
                onValue(value)
                return alone && !untapped.contains(path)
            }
        }
        // BlueZ keeps one notify session per client and characteristic: only the first local subscriber starts it.
        // (Read after the tap's await, so a subscriber that came in meanwhile counts.)
        let alreadyStarted = signalSinks[path]?.isEmpty == false
        let id = addSink(path, continuation, tap: tap)
        if !alreadyStarted {
            do throws(BlueZError) {
                try await serialized(path) { () async throws(BlueZError) in
                    _ = try await call(path, BlueZNames.gattCharacteristic, "StartNotify",
                                       timeout: timeout, what: "StartNotify on \(path)")
                }
            } catch {
                _ = removeSink(path, id)
                throw error
            }
        }
        continuation.onTermination = { [weak self] _ in
            Task { await self?.endSignalSubscription(path, id) }
        }
        return NotificationSubscription(delivery: .signal, characteristicPath: path, mtu: info.mtu,
                                        values: values, deliversToSink: onValue != nil, onStop: { [weak self] in await self?.endSignalSubscription(path, id) })
    }

    /// Drops one signal-path subscriber; the last one still active sends StopNotify (best effort: after a
    /// disconnect BlueZ has already ended the session and the sink is gone).
    func endSignalSubscription(_ path: String, _ id: UInt64) async {
        guard removeSink(path, id), signalSinks[path] == nil else { return }
        do {
            try await serialized(path) { () async throws(BlueZError) in
                _ = try await call(path, BlueZNames.gattCharacteristic, "StopNotify", timeout: .seconds(5),
                                   what: "StopNotify on \(path)")
            }
        } catch {
            logger.debug("StopNotify failed", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}
