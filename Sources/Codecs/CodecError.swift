/// Why one value could not be decoded or encoded. It concerns that message alone (docs/configuration.md#codecs), so it carries
/// just a human-readable reason for the bridge's log topic and the CLI's stderr.
public struct CodecError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
