internal import CDBus
import Glibc

/// Signal subscriptions and the name-owner tracking that lets a rule with a well-known sender be matched locally.
///
/// The bus resolves a well-known sender in a match rule to its unique owner, but the signals it delivers carry only
/// the unique name. Two subscriptions with different well-known senders and otherwise equal rules would both accept
/// each other's signals if the sender were ignored locally, so for every well-known sender in use the connection
/// tracks its current owner: a NameOwnerChanged match with arg0 = the name, then GetNameOwner, both acknowledged
/// before `subscribe` returns (the bus keeps order, so the GetNameOwner reply is newer than any NameOwnerChanged
/// that came before it, and later changes arrive before any signal from the new owner).
extension ConnectionCore {
    struct Subscription {
        var rule: MatchRule
        var continuation: AsyncStream<DBusMessage>.Continuation
        var owner: OwnerWatch?
        var matchAdded = false
    }

    final class OwnerWatch {
        let name: String
        var count = 1
        var owner: String?
        var ready = false
        var matchAdded = false
        var waiters: [(DBusError?) -> Void] = []

        init(name: String) {
            self.name = name
        }

        var rule: MatchRule {
            MatchRule(sender: Bus.name, interface: Bus.interface, member: "NameOwnerChanged", path: Bus.path, arg0: name)
        }
    }

    // MARK: Subscribing

    /// Registers the subscription at once (so nothing matching is missed), then makes sure the sender's owner is
    /// known, then sends AddMatch; `completion` runs when the bus acknowledged it (nil) or on failure.
    func beginSubscription(_ id: UInt64, rule: MatchRule, continuation: AsyncStream<DBusMessage>.Continuation,
                           completion: @escaping (DBusError?) -> Void) {
        guard connected.load(ordering: .acquiring) else {
            completion(.disconnected())
            return
        }
        subscriptions[id] = Subscription(rule: rule, continuation: continuation)
        let addMatch = { [self] () -> Void in
            startCall(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "AddMatch",
                      body: [.string(rule.ruleString)], timeoutMs: 25_000) { [self] result in
                switch result {
                case .success:
                    if subscriptions[id] != nil {
                        subscriptions[id]!.matchAdded = true
                    } else {
                        removeMatch(rule)       // the consumer gave up while AddMatch was in flight
                    }
                    completion(nil)
                case .failure(let error):
                    removeSubscription(id)
                    completion(error)
                }
            }
        }
        if let sender = rule.sender, Self.needsOwnerTracking(sender) {
            let watch = retainOwner(sender)
            subscriptions[id]!.owner = watch
            whenReady(watch) { [self] error in
                if let error {
                    removeSubscription(id)
                    completion(error)
                } else if subscriptions[id] == nil {
                    completion(.disconnected("The subscription ended while it was being set up"))
                } else {
                    addMatch()
                }
            }
        } else {
            addMatch()
        }
    }

    func removeSubscription(_ id: UInt64) {
        guard let sub = subscriptions.removeValue(forKey: id) else { return }
        if sub.matchAdded { removeMatch(sub.rule) }
        if let watch = sub.owner { releaseOwner(watch) }
        sub.continuation.finish()
    }

    private func removeMatch(_ rule: MatchRule) {
        sendWithoutReply(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "RemoveMatch",
                         body: [.string(rule.ruleString)])
    }

    static func needsOwnerTracking(_ sender: String) -> Bool {
        !sender.hasPrefix(":") && sender != Bus.name
    }

    // MARK: Owner tracking

    private func retainOwner(_ name: String) -> OwnerWatch {
        if let watch = owners[name] {
            watch.count += 1
            return watch
        }
        let watch = OwnerWatch(name: name)
        owners[name] = watch
        startCall(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "AddMatch",
                  body: [.string(watch.rule.ruleString)], timeoutMs: 25_000) { [self] result in
            if case .failure(let error) = result { return ownerReady(watch, error) }
            guard owners[name] === watch else { return removeMatch(watch.rule) }
            watch.matchAdded = true
            startCall(destination: Bus.name, path: Bus.path, interface: Bus.interface, member: "GetNameOwner",
                      body: [.string(name)], timeoutMs: 25_000) { [self] result in
                switch result {
                case .success(let body):
                    watch.owner = body.first?.string
                    ownerReady(watch, nil)
                case .failure(let error) where error.name == DBusError.nameHasNoOwnerName:
                    watch.owner = nil
                    ownerReady(watch, nil)
                case .failure(let error):
                    ownerReady(watch, error)
                }
            }
        }
        return watch
    }

    private func whenReady(_ watch: OwnerWatch, _ body: @escaping (DBusError?) -> Void) {
        if watch.ready { body(nil) } else { watch.waiters.append(body) }
    }

    private func ownerReady(_ watch: OwnerWatch, _ error: DBusError?) {
        if error != nil {
            // Forget a failed watch so that a later subscription tries again.
            if owners[watch.name] === watch { owners[watch.name] = nil }
            if watch.matchAdded { removeMatch(watch.rule) }
            watch.matchAdded = false
        } else {
            watch.ready = true
        }
        let waiters = watch.waiters
        watch.waiters = []
        for waiter in waiters { waiter(error) }
    }

    private func releaseOwner(_ watch: OwnerWatch) {
        watch.count -= 1
        guard watch.count == 0 else { return }
        if owners[watch.name] === watch { owners[watch.name] = nil }
        if watch.matchAdded { removeMatch(watch.rule) }
    }

    func failOwnerWatches(_ reason: DBusError) {
        let watches = owners.values
        owners.removeAll()
        for watch in watches {
            let waiters = watch.waiters
            watch.waiters = []
            for waiter in waiters { waiter(reason) }
        }
    }

    // MARK: Delivery

    /// Decodes the header, picks the subscriptions it can match, and decodes the body only if one might. `member` is
    /// the signal's, as the filter read it.
    func deliverSignal(_ raw: OpaquePointer, member: UnsafePointer<CChar>?) {
        guard !subscriptions.isEmpty || !owners.isEmpty || !taps.isEmpty else { return }
        if !taps.isEmpty, tapped(raw, member: member) { return }
        var message = DBusMessage(
            kind: .signal,
            path: dbus_message_get_path(raw).map { String(cString: $0) },
            interface: dbus_message_get_interface(raw).map { String(cString: $0) },
            member: member.map { String(cString: $0) },
            sender: dbus_message_get_sender(raw).map { String(cString: $0) },
            destination: dbus_message_get_destination(raw).map { String(cString: $0) })
        let isOwnerChange = message.sender == Bus.name && message.interface == Bus.interface
            && message.member == "NameOwnerChanged"
        let wanted = subscriptions.values.contains { headerMatches($0, message) }
        guard wanted || (isOwnerChange && !owners.isEmpty) else { return }
        if message.body.isEmpty { message.body = Marshalling.decodeBody(raw) }
        // Before delivery: the sender check of a subscription may depend on it, though a bus-sent NameOwnerChanged
        // only ever reaches rules naming the bus itself or no sender.
        if isOwnerChange, let change = NameOwnerChanged(message), let watch = owners[change.name] {
            watch.owner = change.newOwner.isEmpty ? nil : change.newOwner
        }
        guard wanted else { return }
        for sub in subscriptions.values where headerMatches(sub, message) && sub.rule.matchesArguments(message) {
            sub.continuation.yield(message)
        }
    }

    /// Offers a `PropertiesChanged` to the property taps of its object; true when one consumed it. Works on the raw
    /// message (C strings, no `DBusMessage`): this runs for every signal-path notification.
    private func tapped(_ raw: OpaquePointer, member: UnsafePointer<CChar>?) -> Bool {
        guard let member, strcmp(member, "PropertiesChanged") == 0,
              let interface = dbus_message_get_interface(raw),
              DBusConnection.propertiesInterface.withCString({ strcmp($0, interface) == 0 }),
              let path = dbus_message_get_path(raw) else { return false }
        let sender = dbus_message_get_sender(raw)
        var consumed = false
        for tap in taps.values where tap.path.withCString({ strcmp($0, path) == 0 }) && accepts(tap, sender) {
            guard let (value, alone) = PropertyTap.value(in: raw, interface: tap.interface, property: tap.property)
            else { continue }
            if tap.handler(value, alone) { consumed = true }
        }
        return consumed
    }

    /// `accepts` for a tap, with the sender as libdbus holds it (a C string). A well-known sender's watch is looked
    /// up once per change of `owners`, not once per notification (a String hash and compare each time).
    private func accepts(_ tap: PropertyTap, _ sender: UnsafePointer<CChar>?) -> Bool {
        guard let sender else { return false }
        if tap.sender.withCString({ strcmp($0, sender) == 0 }) { return true }
        if tap.senderIsUnique { return false }
        let generation = ownersGeneration
        if tap.ownerLookup.generation != generation { tap.ownerLookup = (generation, owners[tap.sender]) }
        return tap.ownerLookup.watch?.owner?.withCString { strcmp($0, sender) == 0 } ?? false
    }

    private func headerMatches(_ sub: Subscription, _ message: DBusMessage) -> Bool {
        sub.rule.type == "signal" && sub.rule.matchesHeader(message) && accepts(sub.rule.sender, message.sender)
    }

    private func accepts(_ ruleSender: String?, _ sender: String?) -> Bool {
        guard let ruleSender else { return true }
        guard let sender else { return false }
        if ruleSender == sender { return true }
        if ruleSender.hasPrefix(":") { return false }
        return owners[ruleSender]?.owner == sender
    }
}
