import Glibc
import Synchronization
import Testing
@testable import DBus

/// The next element of `stream`, or a failure after `seconds`.
private func next(_ stream: AsyncStream<DBusMessage>, _ seconds: Double = 5) async throws -> DBusMessage? {
    try await withDeadline(seconds, "next message") {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}

private func expectError(_ name: String, sourceLocation: SourceLocation = #_sourceLocation,
                         _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name), got success", sourceLocation: sourceLocation)
    } catch {
        #expect((error as? DBusError)?.name == name, "\(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct DBusConnectionTests {
    @Test func callsTheBusDaemon() async throws {
        let bus = try PrivateBus()
        let connection = try await DBusConnection.connect(address: bus.address)
        #expect(connection.uniqueName.hasPrefix(":"))
        #expect(connection.isConnected)
        let names = try await connection.listNames()
        #expect(names.contains("org.freedesktop.DBus"))
        #expect(names.contains(connection.uniqueName))
        #expect(try await connection.getNameOwner("org.freedesktop.DBus") == "org.freedesktop.DBus")
        #expect(try await connection.getNameOwner("org.example.Nobody") == nil)
        try await connection.ping()
        #expect(connection.canPassUnixFDs)
        await expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            _ = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "NoSuchMethod")
        }
        await expectError(DBusError.invalidArgsName) {
            _ = try await connection.call(destination: "org.freedesktop.DBus", path: "bad path",
                                          interface: "org.freedesktop.DBus", member: "ListNames")
        }
    }

    @Test func connectingToNothingFails() async {
        await expectError("org.freedesktop.DBus.Error.FileNotFound") {
            _ = try await DBusConnection.connect(address: "unix:path=/tmp/no-such-bus-socket-\(getpid())")
        }
    }

    @Test func exportedHandlerRepliesWithValuesAndErrors() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        await server.exportHandler(path: "/echo") { message in
            if message.member == "Fail" { return .error(DBusError(name: "org.example.Error.Nope", message: "no")) }
            return .values(message.body + [.string(message.sender ?? "")])
        }
        let managed = DBusValue.dictionary(key: "o", value: "a{sa{sv}}", [])
        let reply = try await client.call(destination: server.uniqueName, path: "/echo", interface: "org.example.Echo",
                                          member: "Echo", body: [.uint16(7), managed, .variant(.bytes([]))])
        #expect(reply == [.uint16(7), managed, .variant(.bytes([])), .string(client.uniqueName)])
        await #expect(throws: DBusError(name: "org.example.Error.Nope", message: "no")) {
            _ = try await client.call(destination: server.uniqueName, path: "/echo", interface: "org.example.Echo", member: "Fail")
        }
        await expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            _ = try await client.call(destination: server.uniqueName, path: "/elsewhere", interface: "org.example.Echo", member: "Echo")
        }
    }

    @Test func passesUnixFDsBothWays() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        var serverPipe: [Int32] = [0, 0]
        #expect(pipe(&serverPipe) == 0)
        let (serverRead, serverWrite) = (serverPipe[0], serverPipe[1])
        defer { close(serverRead); close(serverWrite) }
        await server.exportHandler(path: "/fd") { message in
            guard case .receivedFD(let holder)? = message.body.first, let fd = holder.take() else {
                return .error(.invalidArgs("no fd"))
            }
            var byte: UInt8 = 0x41
            _ = write(fd.rawValue, &byte, 1)
            return .values([.unixFD(serverWrite)])
        }
        var clientPipe: [Int32] = [0, 0]
        #expect(pipe(&clientPipe) == 0)
        defer { close(clientPipe[0]); close(clientPipe[1]) }
        let reply = try await client.call(destination: server.uniqueName, path: "/fd", interface: "org.example.Fd",
                                          member: "Swap", body: [.unixFD(clientPipe[1])])
        var byte: UInt8 = 0
        #expect(read(clientPipe[0], &byte, 1) == 1)
        #expect(byte == 0x41)
        guard case .receivedFD(let holder)? = reply.first, let received = holder.take() else {
            Issue.record("no fd in reply: \(reply)")
            return
        }
        #expect(received.rawValue != serverWrite)
        byte = 0x42
        #expect(write(received.rawValue, &byte, 1) == 1)
        _ = consume received
        #expect(read(serverRead, &byte, 1) == 1)
        #expect(byte == 0x42)
    }

    @Test func callTimesOutWithNoReply() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        await server.exportHandler(path: "/silent") { _ in .noReply }
        let start = ContinuousClock.now
        await expectError(DBusError.noReplyName) {
            _ = try await client.call(destination: server.uniqueName, path: "/silent", interface: "org.example.Silent",
                                      member: "Wait", timeout: .milliseconds(200))
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(190) && elapsed < .seconds(10))   // fired by the timeout, not by something else
        #expect(await client.loop.run { client.core.pendingCallCount } == 0)
    }

    @Test func cancellingTheTaskCancelsThePendingCall() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        let (arrived, arrival) = AsyncStream.makeStream(of: Void.self)
        await server.exportHandler(path: "/silent") { _ in
            arrival.yield()
            return .noReply
        }
        let task = Task { () throws -> [DBusValue] in
            try await client.call(destination: server.uniqueName, path: "/silent", interface: "org.example.Silent",
                                  member: "Wait", timeout: .seconds(60))
        }
        var iterator = arrived.makeAsyncIterator()
        _ = await iterator.next()
        task.cancel()
        let result = try await withDeadline(5, "cancelled call") { await task.result }
        #expect(throws: DBusError(name: DBusError.cancelledName, message: "The call was cancelled")) { try result.get() }
        #expect(await client.loop.run { client.core.pendingCallCount } == 0)

        // Already cancelled before the call starts.
        let early = Task { () throws -> [DBusValue] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.call(destination: server.uniqueName, path: "/silent", interface: "org.example.Silent", member: "Wait")
        }
        await #expect(throws: DBusError.self) { try await early.value }
    }

    @Test func subscriptionReceivesOnlyMatchingSignals() async throws {
        let bus = try PrivateBus()
        let emitter = try await DBusConnection.connect(address: bus.address)
        let listener = try await DBusConnection.connect(address: bus.address)
        let stream = try await listener.subscribe(MatchRule(interface: "org.example.Test", member: "Hello",
                                                            pathNamespace: "/org/example"))
        try await emitter.emitSignal(path: "/org/example/a", interface: "org.example.Test", member: "Other", body: [.int32(1)])
        try await emitter.emitSignal(path: "/elsewhere", interface: "org.example.Test", member: "Hello", body: [.int32(2)])
        try await emitter.emitSignal(path: "/org/example/a", interface: "org.example.Test", member: "Hello",
                                     body: [.int32(3), .stringDict(["k": .bytes([1])])])
        let received = try await next(stream)
        let message = try #require(received)
        #expect(message.body == [.int32(3), .stringDict(["k": .bytes([1])])])
        #expect(message.sender == emitter.uniqueName)
        #expect(message.path == "/org/example/a")
        #expect(message.kind == .signal)
    }

    /// The signal path's tap: a characteristic's `Value` read from the raw message, ahead of the subscriptions.
    @Test func propertyTapsRunFirstAndConsumeWhatTheyClaim() async throws {
        let bus = try PrivateBus()
        let listener = try await DBusConnection.connect(address: bus.address)
        let owner = try await DBusConnection.connect(address: bus.address)
        let stranger = try await DBusConnection.connect(address: bus.address)
        #expect(try await owner.requestName("org.example.Owner"))
        let properties = "org.freedesktop.DBus.Properties"
        let stream = try await listener.subscribe(MatchRule(sender: "org.example.Owner", interface: properties))
        let seen = Mutex<[([UInt8], Bool)]>([])
        let tap = await listener.tapProperty(sender: "org.example.Owner", path: "/tapped", interface: "org.example.Char",
                                             property: "Value") { value, alone in
            seen.withLock { $0.append((Array(value), alone)) }
            return alone && value.first.map { $0 % 2 == 0 } ?? true    // even first bytes are claimed
        }
        func changed(_ changes: [String: DBusValue], path: String = "/tapped", interface: String = "org.example.Char",
                     invalidated: [String] = [],
                     from emitter: DBusConnection? = nil) async throws {
            try await (emitter ?? owner).emitSignal(
                path: path, interface: properties, member: "PropertiesChanged",
                body: [.string(interface), .stringDict(changes), .array("s", invalidated.map { .string($0) })])
        }
        try await changed(["Value": .bytes([100])], from: stranger)           // not the owner: never tapped
        try await changed(["Value": .bytes([2, 0xAB])])                       // claimed
        try await changed(["Value": .bytes([1])])                             // seen, goes on
        try await changed(["Value": .bytes([])])                              // empty: claimed
        try await changed(["Value": .bytes([4]), "Flags": .uint16(1)])        // seen, not alone: goes on
        try await changed(["Value": .bytes([6])], invalidated: ["Notifying"]) // seen, not alone: goes on
        try await changed(["Notifying": .bool(true)])                         // no Value: not the tap's
        try await changed(["Value": .bytes([8])], interface: "org.example.Other")   // another interface
        try await changed(["Value": .bytes([10])], path: "/other")             // another object
        try await changed(["Value": .string("not bytes")])                    // not an ay
        #expect(try await next(stream)?.body.first == .string("org.example.Char"))   // the [1] one
        for _ in 0..<6 { _ = try await next(stream) }
        let values = seen.withLock { $0 }
        #expect(values.map(\.0) == [[2, 0xAB], [1], [], [4], [6]])
        #expect(values.map(\.1) == [true, true, true, false, false])

        // Cancelling removes the tap on the loop, after what the loop already had in hand: the listener's loop may
        // take the next signal off the socket before that removal, so wait for it before sending one.
        tap.cancel()
        #expect(await listener.loop.run { listener.core.taps.count } == 0)
        try await changed(["Value": .bytes([8])])
        #expect(try await next(stream)?.body.count == 3)
        #expect(seen.withLock { $0.count } == 5)
    }

    @Test func endingIterationRemovesTheMatch() async throws {
        let bus = try PrivateBus()
        let listener = try await DBusConnection.connect(address: bus.address)
        let stream = try await listener.subscribe(MatchRule(interface: "org.example.Test"))
        #expect(await listener.loop.run { listener.core.subscriptions.count } == 1)
        let consumer = Task { for await _ in stream {} }
        consumer.cancel()
        await consumer.value
        #expect(await listener.loop.run { listener.core.subscriptions.count } == 0)
        // The bus no longer has the rule: the daemon's stats count this connection's match rules.
        let stats = try await listener.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                            interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
                                            body: [.string(listener.uniqueName)])
        #expect(stats.first?.stringDict?["MatchRules"]?.int == 0)
    }

    @Test func wellKnownSendersAreTellApart() async throws {
        let bus = try PrivateBus()
        let listener = try await DBusConnection.connect(address: bus.address)
        let alpha = try await DBusConnection.connect(address: bus.address)
        let beta = try await DBusConnection.connect(address: bus.address)
        #expect(try await alpha.requestName("org.example.Alpha"))
        #expect(try await beta.requestName("org.example.Beta"))
        let fromAlpha = try await listener.subscribe(MatchRule(sender: "org.example.Alpha", interface: "org.example.Test"))
        let fromBeta = try await listener.subscribe(MatchRule(sender: "org.example.Beta", interface: "org.example.Test"))
        try await beta.emitSignal(path: "/", interface: "org.example.Test", member: "One")
        try await alpha.emitSignal(path: "/", interface: "org.example.Test", member: "Two")
        try await beta.emitSignal(path: "/", interface: "org.example.Test", member: "Three")
        #expect(try await next(fromAlpha)?.member == "Two")
        #expect(try await next(fromBeta)?.member == "One")
        #expect(try await next(fromBeta)?.member == "Three")

        // The name moves to another connection: signals from the new owner are now Alpha's.
        alpha.close()
        let gamma = try await DBusConnection.connect(address: bus.address)
        try await withDeadline(5, "name handover") {
            while try await !gamma.requestName("org.example.Alpha") { await gamma.loop.ping() }
        }
        try await gamma.emitSignal(path: "/", interface: "org.example.Test", member: "Four")
        let received = try await next(fromAlpha)
        let handed = try #require(received)
        #expect(handed.member == "Four")
        #expect(handed.sender == gamma.uniqueName)
    }

    @Test func nameOwnerChangedWhenAConnectionLeaves() async throws {
        let bus = try PrivateBus()
        let listener = try await DBusConnection.connect(address: bus.address)
        let leaving = try await DBusConnection.connect(address: bus.address)
        let stream = try await listener.subscribe(MatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                            member: "NameOwnerChanged", arg0: leaving.uniqueName))
        leaving.close()
        #expect(!leaving.isConnected)
        let received = try await next(stream)
        let change = try #require(received.flatMap(NameOwnerChanged.init))
        #expect(change.name == leaving.uniqueName)
        #expect(change.oldOwner == leaving.uniqueName)
        #expect(change.newOwner == "")
    }

    @Test func busDeathFailsCallsAndFinishesStreams() async throws {
        let bus = try PrivateBus()
        let server = try await DBusConnection.connect(address: bus.address)
        let client = try await DBusConnection.connect(address: bus.address)
        let (arrived, arrival) = AsyncStream.makeStream(of: Void.self)
        await server.exportHandler(path: "/silent") { _ in
            arrival.yield()
            return .noReply
        }
        let stream = try await client.subscribe(MatchRule(interface: "org.example.Test"))
        let pending = Task { () throws -> [DBusValue] in
            try await client.call(destination: server.uniqueName, path: "/silent", interface: "org.example.Silent",
                                  member: "Wait", timeout: .seconds(60))
        }
        var iterator = arrived.makeAsyncIterator()
        _ = await iterator.next()
        bus.stop()
        let result = try await withDeadline(5, "call after bus death") { await pending.result }
        #expect(throws: DBusError.self) { try result.get() }
        if case .failure(let error) = result { #expect((error as? DBusError)?.name == DBusError.disconnectedName) }
        #expect(try await next(stream) == nil)
        #expect(!client.isConnected)
        await expectError(DBusError.disconnectedName) { try await client.ping() }
        await expectError(DBusError.disconnectedName) { _ = try await client.subscribe(MatchRule(interface: "x.y")) }
        await client.loop.ping()        // the loop keeps running (watchdog pings must still answer)
    }

    /// Many calls in a row all complete (none is lost or stuck behind the poll); the time is printed, never asserted:
    /// performance is measured by `make bench`.
    @Test func manyCallsInARowComplete() async throws {
        let bus = try PrivateBus()
        let connection = try await DBusConnection.connect(address: bus.address)
        try await connection.ping()
        let count = 500
        let start = ContinuousClock.now
        for _ in 0..<count { try await connection.ping() }
        let perCall = (ContinuousClock.now - start) / count
        print("DBus round trip (Peer.Ping to the daemon): \(perCall)")
        #expect(await connection.loop.run { connection.core.pendingCallCount } == 0)
    }
}
