import Synchronization
import Testing

import LogShipTestKit
@testable import LogShip

@Suite("CommitQueue")
struct CommitQueueTests {
    struct CommitFailure: Error {}

    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// A commit that records what it was given, holds its first call until `release` opens, and fails any batch
    /// holding `failing`; receipts are the items times ten.
    final class Committer: Sendable {
        let commits = Mutex<[[Int]]>([])
        /// Opened once the first commit has begun.
        let writing = Gate()
        /// Holds the first commit until opened.
        let release = Gate()
        let failing: Int?
        let reported = Mutex<[Int]>([])

        init(failing: Int? = nil) {
            self.failing = failing
        }

        func queue(
            capacity: Int = 100, weight: @escaping @Sendable (Int) -> Int = { _ in 1 }
        ) -> CommitQueue<Int, Int> {
            CommitQueue(
                capacity: capacity, weight: weight,
                commitAll: { items in
                    let isFirst = self.commits.withLock { commits in
                        commits.append(items)
                        return commits.count == 1
                    }
                    if isFirst {
                        self.writing.open()
                        await self.release.wait()
                    }
                    if let failing = self.failing, items.contains(failing) { throw CommitFailure() }
                    return items.map { $0 * 10 }
                },
                reportFailure: { _, unwaited in self.reported.withLock { $0 += unwaited } })
        }
    }

    @Test("items queued while a commit is written share the next commit; a waiting caller gets its own receipt")
    func groupCommit() async throws {
        let committer = Committer()
        let queue = committer.queue()
        async let first = queue.append(1)
        await committer.writing.wait()
        try await queue.enqueue(2)
        try await queue.enqueue(3)
        committer.release.open()

        #expect(try await first == 10)
        await queue.close()
        #expect(committer.commits.withLock { $0 } == [[1], [2, 3]])
    }

    @Test("fire-and-forget callers wait while the queued items weigh the capacity, and go in the commit after")
    func capacityBound() async throws {
        let committer = Committer()
        let queue = committer.queue(capacity: 2)
        try await queue.enqueue(1)
        await committer.writing.wait()
        try await queue.enqueue(2)
        try await queue.enqueue(3)  // the queue now weighs its capacity

        let started = Gate()
        let queuedFourth = Flag()
        let fourth = Task {
            started.open()
            try await queue.enqueue(4)
            queuedFourth.set()
        }
        await started.wait()
        #expect(!queuedFourth.isSet, "no room until the commit takes the queue")
        committer.release.open()
        try await fourth.value

        await queue.close()
        #expect(committer.commits.withLock { $0 } == [[1], [2, 3], [4]], "the fourth never joined a full queue")
    }

    @Test("closing refuses new items and returns once everything queued is committed")
    func closeDrains() async throws {
        let committer = Committer()
        let queue = committer.queue()
        try await queue.enqueue(1)
        await committer.writing.wait()
        try await queue.enqueue(2)

        let closing = Task { await queue.close() }
        committer.release.open()
        await closing.value
        #expect(committer.commits.withLock { $0 } == [[1], [2]])
        await #expect(throws: SpoolError.closed) { try await queue.enqueue(3) }
        await #expect(throws: SpoolError.closed) { try await queue.append(3) }
    }

    @Test("a failed commit fails its waiting callers and reports the items no caller waits for")
    func failurePropagation() async throws {
        let committer = Committer(failing: 3)
        let queuedThird = Gate()
        let queue = committer.queue(weight: { item in
            if item == 3 { queuedThird.open() }
            return 1
        })
        try await queue.enqueue(1)
        await committer.writing.wait()
        try await queue.enqueue(2)
        let third = Task { try await queue.append(3) }
        await queuedThird.wait()
        committer.release.open()

        await #expect(throws: CommitFailure.self) { try await third.value }
        try await queue.enqueue(4)
        await queue.close()
        #expect(committer.commits.withLock { $0 } == [[1], [2, 3], [4]], "a failure does not stop the queue")
        #expect(committer.reported.withLock { $0 } == [2])
    }

    /// Commits that take the items no greater than `room` and hand the others back to wait for it.
    final class RoomCommitter: Sendable {
        let room = Mutex(0)
        let commits = Mutex<[[Int]]>([])
        let abandoned = Mutex<[Int]>([])

        func queue() -> CommitQueue<Int, Int> {
            CommitQueue(
                capacity: 2, weight: { _ in 1 },
                commit: { items in
                    self.commits.withLock { $0.append(items) }
                    let limit = self.room.withLock { $0 }
                    let waiting = items.enumerated().filter { $0.element > limit }
                    return .init(receipts: items, waiting: Dictionary(uniqueKeysWithValues: waiting.map { ($0, $1) }))
                },
                reportFailure: { error, items in
                    if error as? SpoolError == .closed { self.abandoned.withLock { $0 += items } }
                })
        }
    }

    @Test("""
        while items wait for room, a caller is held until its own item is stored: one with room goes on, one without \
        waits, and the waiting go first, in order, once room may have been made
        """)
    func waitingForRoom() async throws {
        let committer = RoomCommitter()
        let queue = committer.queue()
        try await queue.enqueue(5)  // nothing waits yet: queued without waiting
        try await waitUntil { queue.waitingWeight == 1 }
        let stored = Flag()
        let held = Task {
            try await queue.enqueue(7)
            stored.set()
        }
        try await waitUntil { queue.waitingWeight == 2 }
        try await queue.enqueue(0)  // room for it: stored, and the caller goes on
        #expect(!stored.isSet, "the caller whose item finds no room is still held")
        #expect(queue.waitingWeight == 2)

        committer.room.withLock { $0 = 10 }
        queue.roomMayHaveChanged()
        try await held.value
        #expect(stored.isSet && queue.waitingWeight == 0)
        await queue.close()
        let history = committer.commits.withLock { $0 }
        #expect(history.last == [5, 7], "\(history)")
        #expect(
            history.allSatisfy { !$0.contains(0) || $0.firstIndex(of: 5) ?? 0 < $0.firstIndex(of: 0)! }, "\(history)")
        #expect(committer.abandoned.withLock { $0 }.isEmpty)
    }

    @Test("""
        items still waiting for room when the queue closes are reported, not waited for; a caller held for one is told \
        the queue closed
        """)
    func closingAbandonsWaiting() async throws {
        let committer = RoomCommitter()
        let queue = committer.queue()
        try await queue.enqueue(1)
        try await waitUntil { queue.waitingWeight == 1 }
        let held = Task { try await queue.enqueue(2) }
        try await waitUntil { queue.waitingWeight == 2 }
        await queue.close()
        await #expect(throws: SpoolError.closed) { try await held.value }
        #expect(committer.abandoned.withLock { $0 } == [1, 2])
        #expect(queue.waitingWeight == 0)
    }

    @Test("""
        once its callers stop, a held caller goes on and none is held or kept out any more; what still waits is \
        reported at close
        """)
    func stopHolding() async throws {
        let committer = RoomCommitter()
        let queue = committer.queue()
        try await queue.enqueue(5)
        try await waitUntil { queue.waitingWeight == 1 }
        let held = Task { try await queue.enqueue(7) }
        try await waitUntil { queue.waitingWeight == 2 }
        queue.stopHolding()
        try await held.value
        // Neither is held, and the capacity (2) keeps neither out: the waiting items do not count against it.
        try await queue.enqueue(8)
        try await queue.enqueue(9)
        try await waitUntil { queue.waitingWeight == 4 }
        await queue.close()
        #expect(committer.abandoned.withLock { $0 } == [5, 7, 8, 9])
    }
}
