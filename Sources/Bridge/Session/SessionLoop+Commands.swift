import BlueZ
import Bluetooth
import BridgeChannels
import BridgeModel
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
            jobs.append(work.expiry(at: deadline))
        }
    }

    /// The command's job: its channel as resolved, and for a read-mode channel the read-back after a write.
    func executeJob(_ command: DeviceCommand) -> Job {
        guard let channel = channels[command.channel], let info = resolved[command.channel],
              let publisher = publishers[command.channel] else {
            let inbox = self.inbox, id = command.id
            return { inbox.yield(.commandFinished(id, .failed("channel \(command.channel) is not available"))) }
        }
        // A read-mode channel has no notification to show the new state: it is read back, so a Home Assistant
        // switch does not flip back until the next poll.
        let readBack = mode(of: channel) == .read ? work.read(channel, info, into: publisher) : nil
        return work.execute(command, channel: channel, info: info, publisher: publisher, readBack: readBack)
    }
}
