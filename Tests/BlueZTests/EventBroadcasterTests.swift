import Testing
@testable import BlueZ

struct EventBroadcasterTests {
    @Test func everySubscriberGetsEveryEventInOrder() async {
        let broadcaster = EventBroadcaster<Int>()
        let first = broadcaster.subscribe()
        let second = broadcaster.subscribe()
        for value in 1...3 { broadcaster.yield(value) }
        broadcaster.finishAll()
        var a: [Int] = []
        for await value in first.stream { a.append(value) }
        var b: [Int] = []
        for await value in second.stream { b.append(value) }
        #expect(a == [1, 2, 3])
        #expect(b == [1, 2, 3])
        // After finishAll new subscribers get an ended stream.
        var late: [Int] = []
        for await value in broadcaster.subscribe().stream { late.append(value) }
        #expect(late.isEmpty)
    }

    @Test func finishingOneSubscriberLeavesTheOthers() async {
        let broadcaster = EventBroadcaster<Int>()
        let first = broadcaster.subscribe()
        let second = broadcaster.subscribe()
        broadcaster.finish(first.id)
        broadcaster.yield(7)
        broadcaster.finishAll()
        var a: [Int] = []
        for await value in first.stream { a.append(value) }
        var b: [Int] = []
        for await value in second.stream { b.append(value) }
        #expect(a.isEmpty)
        #expect(b == [7])
    }
}
