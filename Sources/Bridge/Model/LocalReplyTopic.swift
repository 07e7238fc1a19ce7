/// Response Topics of requests the bridge makes of itself (the web page's, docs/web.md): the page's actions go
/// through the same code as a broker's `…/set` and `B/bridge/request/…`, answers included, and an answer to one of
/// these topics is handed back in the process instead of being published. A broker client cannot name one and
/// receive it: the topic starts with `$` (no broker routes it to a client as a normal topic) and carries a random
/// token drawn at start.
package enum LocalReplyTopic {
    package static let prefix = "$gattbridge-local/"

    package static func isLocal(_ topic: String) -> Bool {
        topic.utf8.first == UInt8(ascii: "$") && topic.hasPrefix(prefix)
    }
}
