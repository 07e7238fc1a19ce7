import BlueZ

/// The sessions' connect slot: the keyed FIFO gate with one lane per adapter (see `KeyedGate`).
public typealias ConnectGate<Key: Hashable & Sendable> = KeyedGate<Key>
