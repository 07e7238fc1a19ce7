/// One input of a feature that keeps timers of its own: a core event, or one of its timers firing.
package enum FeatureInput<Timer: Sendable>: Sendable {
    case event(CoreEvent)
    case timer(Timer)
}

/// Runs a feature's loop over the core's events merged with its own timers. `handle` returns the timers to arm
/// (when, which); they live in a task group that ends with the loop, so no timer outlives the feature. A broker
/// message's bytes leave the features' backlog once `handle` is done with it, not when it is handed on to this
/// loop's own queue, so that queue cannot outgrow the backlog's bound (`FeatureBacklog`).
package func runFeatureLoop<Timer: Sendable>(
    _ events: FeatureEvents, timer: Timer.Type,
    _ handle: (FeatureInput<Timer>) async -> [(at: ContinuousClock.Instant, timer: Timer)]
) async {
    let (inputs, feed) = AsyncStream.makeStream(of: (input: FeatureInput<Timer>, bytes: Int).self)
    await withDiscardingTaskGroup { group in
        group.addTask {
            for await delivery in events.deliveries { feed.yield((.event(delivery.event), delivery.bytes)) }
            feed.finish()
        }
        for await (input, bytes) in inputs {
            for (deadline, timer) in await handle(input) {
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    feed.yield((.timer(timer), 0))
                }
            }
            events.backlog.release(bytes)
        }
        group.cancelAll()
    }
}
