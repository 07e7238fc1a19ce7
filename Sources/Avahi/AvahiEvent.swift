/// What became of an announcement, for the owner of an `AvahiAnnouncer` (logs say the same).
public enum AvahiEvent: Sendable, Equatable {
    /// avahi-daemon confirmed the service under this name (its entry group is established).
    case announced(name: String)
    /// Another host or service holds the name: the service is announced again under `to`.
    case renamed(from: String, to: String)
    /// avahi-daemon is not on the system bus: nothing is announced (the one warning), until it appears.
    case unavailable(String)
    /// avahi-daemon left the bus or is re-registering its host name: the announcement is gone until it is back.
    case withdrawn
    /// avahi-daemon refused the service or a call failed; the message says which.
    case failed(String)
}
