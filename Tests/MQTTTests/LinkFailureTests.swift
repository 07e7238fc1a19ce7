import Glibc
import Testing
@testable import MQTT

/// A link failure is a value the loop decides on; its text is made once, for the connection state and the log, and
/// keeps the wording users and tests have read so far.
@Suite struct LinkFailureTests {
    @Test func aSystemErrorSaysWhatTheSystemSaid() {
        let failure = LinkFailure.error(code: 14 /* MOSQ_ERR_ERRNO */, errno: ECONNREFUSED)
        #expect(failure.code == 14)
        #expect(failure.description == String(cString: strerror(ECONNREFUSED)))
    }

    @Test func aRefusalSaysSoInEitherProtocol() {
        // 5: "not authorised" as an MQTT 3.1.1 CONNACK return code; 0x87 the MQTT 5 reason code of the same refusal.
        let v311 = LinkFailure.refused(code: 5, v5: false)
        let v5 = LinkFailure.refused(code: 0x87, v5: true)
        #expect(v311.code == 5 && v5.code == 0x87)
        for failure in [v311, v5] {
            #expect(failure.description.hasPrefix("connection refused: "), "\(failure)")
            #expect(failure.description.lowercased().contains("not authori"), "\(failure)")
        }
    }

    @Test func ourOwnDisconnectIsCodeZero() {
        #expect(LinkFailure.closedByClient.code == 0)
        #expect(LinkFailure.closedByClient.description == "disconnected by client")
    }

    @Test func aConnectCallReturnsAnOutcome() {
        #expect(ConnectOutcome(rc: 0, errno: EAGAIN) == .opened)
        #expect(ConnectOutcome(rc: 14, errno: ETIMEDOUT) == .failed(.error(code: 14, errno: ETIMEDOUT)))
    }
}
