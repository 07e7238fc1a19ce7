import DBus
import Testing
@testable import BlueZ

struct BlueZErrorTests {
    static let mapping: [(String, BlueZError)] = [
        ("org.bluez.Error.InProgress", .inProgress),
        ("org.bluez.Error.NotConnected", .notConnected),
        ("org.bluez.Error.Failed", .failed(reason: "the message")),
        ("org.bluez.Error.DoesNotExist", .doesNotExist),
        ("org.bluez.Error.NotPermitted", .notPermitted),
        ("org.bluez.Error.NotSupported", .notSupported),
        ("org.bluez.Error.NotAuthorized", .notAuthorized),
        ("org.bluez.Error.InvalidArguments", .invalidArguments),
        ("org.bluez.Error.InvalidOffset", .invalidOffset),
        ("org.bluez.Error.InvalidValueLength", .invalidValueLength),
        ("org.bluez.Error.AlreadyConnected", .alreadyConnected),
        ("org.bluez.Error.AlreadyExists", .alreadyExists),
        ("org.bluez.Error.NotReady", .notReady),
        ("org.bluez.Error.NotAvailable", .notAvailable),
        ("org.bluez.Error.AuthenticationFailed", .authenticationFailed),
        ("org.bluez.Error.AuthenticationCanceled", .authenticationCanceled),
        ("org.bluez.Error.AuthenticationRejected", .authenticationRejected),
        ("org.bluez.Error.AuthenticationTimeout", .authenticationTimeout),
        ("org.bluez.Error.ConnectionAttemptFailed", .connectionAttemptFailed),
        ("org.freedesktop.DBus.Error.NoReply", .noReply),
        ("org.freedesktop.DBus.Error.ServiceUnknown", .serviceUnknown),
        ("org.freedesktop.DBus.Error.UnknownObject", .unknownObject),
        ("org.freedesktop.DBus.Error.UnknownMethod", .unknownMethod),
        ("org.freedesktop.DBus.Error.Disconnected", .disconnected),
        (DBusError.cancelledName, .cancelled),
    ]

    @Test func mapsEveryKnownName() {
        for (name, expected) in Self.mapping {
            #expect(BlueZError(DBusError(name: name, message: "the message")) == expected, "\(name)")
        }
    }

    /// bluetoothd answers ATT Insufficient Authentication/Encryption with NotPermitted "Not paired" (gatt-client.c).
    @Test func notPairedIsToldApartFromOtherRefusals() {
        #expect(BlueZError(DBusError(name: "org.bluez.Error.NotPermitted", message: "Not paired")) == .notPaired)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.NotPermitted", message: "Read not permitted")) == .notPermitted)
    }

    @Test func failedKeepsTheReason() {
        let error = BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local"))
        #expect(error == .failed(reason: "le-connection-abort-by-local"))
        #expect(error.description == "failed: le-connection-abort-by-local")
    }

    @Test func unknownNamesKeepNameAndMessage() {
        let error = BlueZError(DBusError(name: "org.bluez.Error.BREDR.ProfileUnavailable", message: "Exhausted"))
        #expect(error == .other(name: "org.bluez.Error.BREDR.ProfileUnavailable", message: "Exhausted"))
        #expect(error.description == "org.bluez.Error.BREDR.ProfileUnavailable: Exhausted")
    }

    @Test func mapsArbitraryErrors() {
        #expect(BlueZError.from(CancellationError()) == .cancelled)
        #expect(BlueZError.from(BlueZError.notReady) == .notReady)
        #expect(BlueZError.from(DBusError(name: "org.bluez.Error.NotConnected", message: "")) == .notConnected)
    }

    @Test func transientClassification() {
        #expect(BlueZError.failed(reason: "x").isTransient)
        #expect(BlueZError.timeout("x").isTransient)
        #expect(BlueZError.notConnected.isTransient)
        #expect(!BlueZError.notPermitted.isTransient)
        #expect(!BlueZError.notSupported.isTransient)
        #expect(!BlueZError.invalidValueLength.isTransient)
    }

    @Test func ourDeadlineAndLibdbusNoReplyAreBothTimeouts() {
        #expect(BlueZError.timeout("pairing").isTimeout)
        #expect(BlueZError(DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply")).isTimeout)
        #expect(!BlueZError.authenticationFailed.isTimeout)
        #expect(!BlueZError.failed(reason: "x").isTimeout)
    }

    @Test func acquireNotifyRefusalsFallBackToStartNotify() {
        for error: BlueZError in [.notSupported, .unknownMethod, .failed(reason: "x"), .notPermitted,
                                  .other(name: "org.example.Error", message: "")] {
            #expect(BlueZClient.fallsBackToStartNotify(error), "\(error)")
        }
        for error: BlueZError in [.notConnected, .timeout("x"), .serviceUnknown, .cancelled, .bluezUnavailable, .unknownObject] {
            #expect(!BlueZClient.fallsBackToStartNotify(error), "\(error)")
        }
    }
}
