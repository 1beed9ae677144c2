import Foundation
import Synchronization
import Testing

import LogShipTestKit
@testable import LogShip

/// An operation whose work ends when the test says so.
final class GateOperation: ConcurrentOperation<Int>, @unchecked Sendable {
    let started = Mutex(false)
    let cancelledWhileRunning = Mutex(false)
    private let value: Int

    init(value: Int, resultHandler: @escaping ResultHandler) {
        self.value = value
        super.init(resultHandler: resultHandler)
    }

    override func main() {
        started.withLock { $0 = true }
    }

    override func cancelExecution() {
        cancelledWhileRunning.withLock { $0 = true }
        finish(.failure(CancellationError()))
    }

    func open() { finish(.success(value)) }
}

/// Collects results and lets a test wait for a number of them.
final class ResultLog: Sendable {
    let results = Mutex<[Result<Int, any Error>]>([])
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    func record(_ result: Result<Int, any Error>) {
        results.withLock { $0.append(result) }
        continuation.yield()
    }

    func waitFor(_ count: Int, within timeout: Duration = .seconds(60)) async throws {
        let stream = self.stream
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = stream.makeAsyncIterator()
                while self.results.withLock({ $0.count }) < count { _ = await iterator.next() }
            }
            group.addTask {
                try await Task.sleep(for: timeout)  // the deadline, not synchronisation
                throw WaitTimeout(description: "\(count) results not seen within \(timeout)")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    var values: [Int] { results.withLock { $0.compactMap { try? $0.get() } } }
}

@Suite("ConcurrentOperation on corelibs' OperationQueue")
struct ConcurrentOperationTests {
    @Test("the queue runs at most maxConcurrentOperationCount at once and frees a slot on finish")
    func slots() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let log = ResultLog()
        let operations = (0..<5).map { GateOperation(value: $0, resultHandler: log.record) }
        operations.forEach(queue.addOperation)
        // `main()` runs a little after the state reads executing, so wait for what is set last.
        try await waitUntil { operations.count { $0.started.withLock { $0 } } == 2 }
        #expect(operations.filter(\.isExecuting).count == 2)

        operations[0].open()
        try await log.waitFor(1)
        try await waitUntil { operations.filter(\.isExecuting).count == 2 }
        for operation in operations where !operation.isFinished {
            try await waitUntil { operation.isExecuting }
            operation.open()
        }
        try await log.waitFor(5)
        #expect(log.values.sorted() == [0, 1, 2, 3, 4])
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test("finish is delivered exactly once")
    func finishOnce() async throws {
        let queue = OperationQueue()
        let log = ResultLog()
        let operation = GateOperation(value: 7, resultHandler: log.record)
        queue.addOperation(operation)
        try await waitUntil { operation.isExecuting }
        operation.open()
        operation.finish(.success(8))
        operation.cancel()
        try await log.waitFor(1)
        try await waitUntil { queue.operationCount == 0 }
        #expect(log.values == [7])
    }

    @Test("an operation cancelled before it starts finishes only when the queue starts it, without crashing the queue")
    func cancelBeforeStart() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = ResultLog()
        let blocker = GateOperation(value: 1, resultHandler: log.record)
        let waiting = GateOperation(value: 2, resultHandler: log.record)
        queue.addOperation(blocker)
        queue.addOperation(waiting)
        try await waitUntil { blocker.isExecuting }
        waiting.cancel()
        #expect(!waiting.isFinished, "finishing before the queue starts it would crash corelibs' queue")
        blocker.open()
        try await log.waitFor(2)
        try await waitUntil { queue.operationCount == 0 }
        #expect(!waiting.started.withLock { $0 }, "a cancelled operation's work never starts")
        #expect(log.results.withLock {
            $0.contains { if case .failure(is CancellationError) = $0 { true } else { false } }
        })
    }

    @Test("cancelling a running operation stops its work, which still finishes once")
    func cancelWhileRunning() async throws {
        let queue = OperationQueue()
        let log = ResultLog()
        let operation = GateOperation(value: 3, resultHandler: log.record)
        queue.addOperation(operation)
        try await waitUntil { operation.isExecuting }
        operation.cancel()
        try await log.waitFor(1)
        try await waitUntil { queue.operationCount == 0 }
        #expect(operation.cancelledWhileRunning.withLock { $0 })
        #expect(log.results.withLock { $0.count } == 1)
    }

    @Test("a finish that comes before the queue starts the operation is kept until it does")
    func earlyFinish() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = ResultLog()
        let blocker = GateOperation(value: 1, resultHandler: log.record)
        let early = GateOperation(value: 2, resultHandler: log.record)
        queue.addOperation(blocker)
        queue.addOperation(early)
        try await waitUntil { blocker.isExecuting }
        early.open()
        #expect(!early.isFinished)
        blocker.open()
        try await log.waitFor(2)
        try await waitUntil { queue.operationCount == 0 }
        #expect(log.values == [1, 2])
    }

    @Test("a waiting veryHigh operation starts before waiting lower ones")
    func priorityOrder() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = ResultLog()
        let blocker = GateOperation(value: 0, resultHandler: log.record)
        queue.addOperation(blocker)
        try await waitUntil { blocker.isExecuting }
        let waiting = PriorityClass.allCases.map { priorityClass in
            let operation = GateOperation(value: priorityClass.rawValue + 1, resultHandler: log.record)
            operation.queuePriority = priorityClass.queuePriority
            return operation
        }
        waiting.forEach(queue.addOperation)
        blocker.open()
        for _ in waiting {
            try await waitUntil { waiting.contains(where: \.isExecuting) }
            // The next one may start the moment this one finishes: wait for this one, not for a gap.
            let running = waiting.first(where: \.isExecuting)!
            running.open()
            try await waitUntil { running.isFinished }
        }
        try await log.waitFor(6)
        #expect(log.values == [0, 5, 4, 3, 2, 1])
    }
}
