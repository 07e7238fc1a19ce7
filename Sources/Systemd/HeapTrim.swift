internal import CSystemd

/// Gives the heap's free pages back to the kernel (glibc's `malloc_trim(0)`).
///
/// A flood (20,000 messages on the bridge's topics) fills the bounded MQTT inbox, the features' backlog and the
/// broker's queue of republished configs: a few megabytes of short-lived messages, freed once the bridge has caught
/// up. glibc keeps freed memory in its arenas for reuse and returns only what lies at the top of a heap, so the
/// daemon's anonymous memory stayed at the flood's high-water mark (docs/dev/MEMORY.md, "After a flood"). On a
/// Pi Zero's 512 MB shared with Home Assistant, and against the unit's `MemoryMax`, that is memory held for
/// nothing. Trimming walks the arenas' free lists and `madvise`s whole free pages away: a few hundred microseconds,
/// done once after a flood, never per message.
public enum HeapTrim {
    /// True when some memory was returned.
    @discardableResult
    public static func release() -> Bool {
        gattbridge_malloc_trim() == 1
    }
}
