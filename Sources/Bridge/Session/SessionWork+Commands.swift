import BlueZ
import BridgeChannels
import BridgeModel
import Config

/// Commands' jobs (docs/commands.md): a read or the chunks of a write, then the outcome back to the session.
extension SessionWork {
    /// Runs `command` on the characteristic `info`; `readBack` (a read-mode channel's read) runs inside the same
    /// job, so the next command waits for it and read-backs are published in command order (a read-back beside the
    /// next write could publish the older value last).
    func execute(_ command: DeviceCommand, channel: ChannelConfig, info: GattCharacteristicInfo,
                 publisher: ChannelPublisher, readBack: Job?) -> Job {
        let inbox = self.inbox, gatt = env.gatt, id = command.id, hint = securityHint
        switch command.kind {
        case .get:
            return {
                do throws(BlueZError) {
                    publisher.publishRead(try await gatt.read(characteristic: info.path))
                    inbox.yield(.commandFinished(id, .done))
                } catch {
                    inbox.yield(.commandFinished(id, Self.outcome(of: error, written: 0, what: "read", hint: hint(error))))
                }
            }
        case .set(let bytes):
            let chunks = CommandEncoding.chunks(bytes, channel: channel, mtu: info.mtu)
            let type = CommandEncoding.writeType(channel, info)
            return {
                var written = 0
                do throws(BlueZError) {
                    for chunk in chunks {
                        try await gatt.write(characteristic: info.path, chunk, type: type)
                        written += 1
                    }
                    if let readBack { await readBack() }
                    inbox.yield(.commandFinished(id, .done))
                } catch {
                    inbox.yield(.commandFinished(id, Self.outcome(of: error, written: written, what: "write",
                                                                 hint: hint(error))))
                }
            }
        }
    }

    /// Feeds `.expiryDue` at the earliest command deadline.
    func expiry(at deadline: ContinuousClock.Instant) -> Job {
        let inbox = self.inbox
        return {
            try? await Task.sleep(until: deadline, clock: .continuous)
            if !Task.isCancelled { inbox.yield(.expiryDue) }
        }
    }

    /// A link that went is retried after the reconnection (unless part of a text was already written); anything
    /// else is the command's own failure.
    static func outcome(of error: BlueZError, written: Int, what: String,
                        hint: String? = nil) -> CommandScheduler.Outcome {
        switch FailureKind(error, stage: .operation) {
        case .notConnected, .deviceGone, .serviceUnknown, .bluezGone, .linkLost:
            return .linkLost(partial: written > 0)
        default:
            return .failed("\(what) failed: \(error)" + (hint.map { "; \($0)" } ?? ""))
        }
    }
}
