/// One input of a feature that keeps timers of its own: a core event, or one of its timers firing.
enum FeatureInput<Timer: Sendable>: Sendable {
    case event(CoreEvent)
    case timer(Timer)
}

/// Runs a feature's loop over the core's events merged with its own timers. `handle` returns the timers to arm
/// (when, which); they live in a task group that ends with the loop, so no timer outlives the feature.
func runFeatureLoop<Timer: Sendable>(
    _ events: AsyncStream<CoreEvent>, timer: Timer.Type,
    _ handle: (FeatureInput<Timer>) async -> [(at: ContinuousClock.Instant, timer: Timer)]
) async {
    let (inputs, feed) = AsyncStream.makeStream(of: FeatureInput<Timer>.self)
    await withDiscardingTaskGroup { group in
        group.addTask {
            for await event in events { feed.yield(.event(event)) }
            feed.finish()
        }
        for await input in inputs {
            for (deadline, timer) in await handle(input) {
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    feed.yield(.timer(timer))
                }
            }
        }
        group.cancelAll()
    }
}
