import BlueZ
import Bluetooth
import Codecs
import Config
import Logging

/// Commands: into the `CommandScheduler`, its verdicts reported, and the scheduled ones run as child tasks.
extension SessionLoop {
    mutating func command(_ request: CommandRequest, _ jobs: inout [Job]) {
        let channel = request.channel
        let kind: DeviceCommand.Kind
        switch request.verb {
        case .get:
            guard !channel.homeassistant.isEvent else {
                reject(request, "channel \(config.name)/\(channel.name) carries events (button presses); it has no state to read")
                return
            }
            guard machine.isOnline, resolved[channel.name] != nil else {
                reject(request, "device \(config.name) is offline")
                return
            }
            kind = .get
        case .set:
            do {
                kind = .set(try CommandEncoding.encode(request.payload, for: channel))
            } catch {
                reject(request, "\(error)")      // the codec's message quotes the payload (cut, escaped)
                return
            }
        }
        nextCommandID += 1
        let command = DeviceCommand(id: nextCommandID, channel: channel.name, kind: kind, topic: request.topic,
                                    payload: request.payload, arrival: .now, ttl: channel.commandTTL,
                                    replies: request.replies)
        report(scheduler.submit(command))
        pumpCommands(&jobs)
    }

    func reject(_ request: CommandRequest, _ reason: String, payload: [UInt8]? = nil) {
        env.report(.rejected(CommandRejection(topic: request.topic, reason: reason, payload: payload,
                                              replies: request.replies)))
    }

    func report(_ verdicts: [CommandScheduler.Verdict]) {
        for verdict in verdicts {
            switch verdict {
            case .completed(let command):
                if !command.replies.isEmpty { env.report(.completed(command)) }
            case .rejected(let command, let reason):
                let payload: [UInt8]? = command.isGet ? nil : command.payload
                env.report(.rejected(CommandRejection(topic: command.topic, reason: "\(config.name)/\(command.channel): \(reason)",
                                                      payload: payload, replies: command.replies)))
            }
        }
    }

    /// Runs the next command if the device can take it, and keeps one expiry timer armed for the earliest deadline.
    mutating func pumpCommands(_ jobs: inout [Job]) {
        let (next, expired) = scheduler.next(now: .now, online: machine.isOnline)
        report(expired)
        if let next {
            jobs.append(executeJob(next))
        }
        if let deadline = scheduler.nextDeadline, armedExpiry.map({ deadline < $0 }) ?? true {
            armedExpiry = deadline
            let inbox = self.inbox
            jobs.append {
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { inbox.yield(.expiryDue) }
            }
        }
    }

    func executeJob(_ command: DeviceCommand) -> Job {
        let inbox = self.inbox, gatt = env.gatt, id = command.id, hint = securityHint
        guard let channel = channels[command.channel], let info = resolved[command.channel],
              let publisher = publishers[command.channel] else {
            return { inbox.yield(.commandFinished(id, .failed("channel \(command.channel) is not available"))) }
        }
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
            // A read-mode channel has no notification to show the new state: it is read back, so a Home Assistant
            // switch does not flip back until the next poll. Inside the command's own job, so the next command
            // waits for it and read-backs are published in command order (a read-back beside the next write could
            // publish the older value last).
            let readBack = mode(of: channel) == .read ? readJob(channel) : nil
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

    /// docs/pairing.md: a device configured without pairing whose operation failed for lack of authentication or
    /// encryption gets told how to fix it; a device that pairs already does what it can.
    var securityHint: @Sendable (BlueZError) -> String? {
        guard config.pairing.mode == .none else { return { _ in nil } }
        let name = config.name
        return { error in
            if error.suggestsPairing {
                return "device \(name) seems to need pairing (insufficient authentication or encryption): set pairing: just_works or pairing: passkey in its config"
            }
            // What an unpaired subscription to a protected characteristic leaves on BlueZ 5.66: the AcquireNotify that
            // met the refusal is never answered, and every later subscription gets this (see BlueZError.notifyAcquired).
            if error == .notifyAcquired {
                return "BlueZ holds the notifications of device \(name) as acquired: by another program, or by an AcquireNotify that BlueZ before 5.84 never released after enabling notifications failed (as when the device refuses an unencrypted link; restarting bluetoothd clears it); if the device needs pairing, set pairing: just_works or pairing: passkey in its config"
            }
            return nil
        }
    }
}
