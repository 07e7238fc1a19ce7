import BlueZ
import BridgeChannels
import BridgeModel
import Config

/// A `set` or `get` as it arrived from MQTT, before the session checked and scheduled it.
public struct CommandRequest: Sendable {
    public var channel: ChannelConfig
    public var verb: CommandVerb
    public var payload: [UInt8]
    public var topic: String
    public var replies: [ReplyTarget]

    public init(channel: ChannelConfig, verb: CommandVerb, payload: [UInt8], topic: String, replies: [ReplyTarget] = []) {
        self.channel = channel
        self.verb = verb
        self.payload = payload
        self.topic = topic
        self.replies = replies
    }
}

/// Everything a session's loop reacts to, in one inbox: facts from BlueZ, commands, timers, and the results of the
/// work it started. Results carry the generation (or epoch) they belong to, so a late one is recognised as stale.
package enum SessionInput: Sendable {
    // From the core.
    case adapter(AdapterInfo?)
    case bluez(available: Bool)
    case device(BlueZEvent)
    case command(CommandRequest)
    /// Publish availability (and, with `states`, every channel's last value) again.
    case republish(states: Bool)
    case stop

    // Results of the session's own work.
    case machine(SessionEvent)
    /// The device looked up on `adapter`; `sequence` tells the latest adapter fact from an overtaken one.
    case adapterLooked(DeviceInfo?, adapter: AdapterInfo, sequence: UInt64)
    case foundIfStill(SessionGeneration)
    case resolved(GattTree, SessionGeneration)
    case subscribed([ActiveSubscription], SessionGeneration)
    case subscriptionEnded(SessionGeneration, channel: String)
    case cleanupDone(UInt64)
    case commandFinished(UInt64, CommandScheduler.Outcome)
    case pollDue(channel: String, epoch: Int)
    case pollFinished(channel: String, epoch: Int)
    case expiryDue
    case identified(DeviceIdentity)
}

/// One notify channel's live subscription.
package struct ActiveSubscription: Sendable {
    let channel: ChannelConfig
    let subscription: any ValueSubscription
    let gate: NotificationGate
}
