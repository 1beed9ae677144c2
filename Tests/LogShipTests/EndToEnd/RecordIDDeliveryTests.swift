import Foundation
import LogShip
import LogShipClient
import LogShipTestKit
import Testing

/// Issue 40: the real `logshipd` repeats some records, as every shipper does after a `kill -9` or a lost answer,
/// and each repeat carries the id and `Idempotency-Key` of its first attempt, so that a receiver can drop it.
@Suite("Record ids across repeats", .serialized)
struct RecordIDDeliveryTests {
    static let messages = (0..<1_000).map { "record \($0)" }

    @Test("""
        kill -9 with two requests in flight: after a restart every record arrives, and the repeats carry the ids and \
        keys of their first attempts
        """)
    func killWithRequestsInFlight() async throws {
        // Every request is held until the daemon is dead: the two in flight are stored by the receiver but
        // never acknowledged, the most a kill can repeat.
        let gate = Gate()
        defer { gate.open() }
        let receiver = try await TestReceiver(behavior: .init(hold: { _ in await gate.wait() }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(
            directory: directory, url: receiver.url, upload: ["timeout: 10m"], batchRecords: 100)
        var daemon = try await LogshipdProcess.start(directory: directory)
        try await send(Self.messages, to: directory)
        let held = try await LogshipdProcess.waitUntilOnlyHeldClaimed(
            directory: directory, receiver: receiver, requests: 2, firstHeld: 0)
        #expect(held > 0)
        daemon.signal(SIGKILL)
        _ = try await daemon.wait()
        let firstAttempts = receiver.requests
        gate.open()

        daemon = try await LogshipdProcess.start(directory: directory)
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            Set(Self.messages).isSubset(of: Set(requests.flatMap(\.records).map(\.message)))
        }
        Self.expectRepeatsIdentified(receiver.requests, firstAttempts: firstAttempts)
        let deduplicated = Self.deduplicated(receiver.requests)
        #expect(deduplicated.sorted() == Self.messages.sorted(), "once each, after dropping the repeats by id")
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    @Test("a receiver that stores a request and closes the connection unanswered gets it again: same ids, same key")
    func lostAnswer() async throws {
        let receiver = try await TestReceiver(behavior: .init(closesUnanswered: { $0 == 0 }))
        let directory = try TemporaryDirectory.make()
        try LogshipdProcess.configure(directory: directory, url: receiver.url, batchRecords: 100)
        let daemon = try await LogshipdProcess.start(directory: directory)
        try await send(Self.messages, to: directory)
        try await receiver.waitUntil(within: .seconds(300)) { requests in
            let later = requests.filter { $0.sequence > 0 }
            return Set(Self.messages).isSubset(of: Set(later.flatMap(\.records).map(\.message)))
        }
        let lost = try #require(receiver.requests.first { $0.sequence == 0 })
        Self.expectRepeatsIdentified(receiver.requests, firstAttempts: [lost])
        let again = receiver.requests.filter {
            $0.sequence > 0 && $0.headers.first(name: "Idempotency-Key") == lost.headers.first(name: "Idempotency-Key")
        }
        #expect(again.count == 1 && again.first?.recordIDs == lost.recordIDs, "sent again whole, under its key")
        #expect(Self.deduplicated(receiver.requests).sorted() == Self.messages.sorted())
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait().status == 0)
    }

    /// Sends `messages` while delivery is paused, so that every request carries a full batch, as the same claims
    /// after a restart do.
    private func send(_ messages: [String], to directory: String) async throws {
        let socket = ["--socket", "\(directory)/control.sock"]
        #expect(try await run(Binaries.logctl, ["pause"] + socket).status == 0)
        let sent = try await run(
            Binaries.logctl, ["send"] + socket, stdin: Data((messages.joined(separator: "\n") + "\n").utf8))
        #expect(sent.status == 0, "\(sent.standardError)")
        #expect(try await run(Binaries.logctl, ["resume"] + socket).status == 0)
    }

    /// Every record carries an id, one id per message whichever attempt carried it, a different one for each
    /// message; the repeated records are exactly those of `firstAttempts`, and each of those requests' keys
    /// comes again with the same ids.
    private static func expectRepeatsIdentified(
        _ requests: [LogReceiver.Request], firstAttempts: [LogReceiver.Request]
    ) {
        var idsByMessage: [String: Set<String>] = [:]
        var occurrences: [String: Int] = [:]
        for request in requests {
            #expect(request.recordIDs.count == request.records.count && request.recordIDs.allSatisfy { $0 != nil })
            for (record, id) in zip(request.records, request.recordIDs) {
                idsByMessage[record.message, default: []].insert(id ?? "")
                occurrences[record.message, default: 0] += 1
            }
        }
        #expect(idsByMessage.values.allSatisfy { $0.count == 1 }, "a repeat has its first attempt's id")
        #expect(Set(idsByMessage.values.flatMap { $0 }).count == idsByMessage.count, "no two records share an id")
        let repeated = Set(occurrences.filter { $0.value > 1 }.keys)
        let inFlight = Set(firstAttempts.flatMap(\.records).map(\.message))
        #expect(
            repeated == inFlight,
            """
            only what was in flight repeats: \(repeated.count) repeated, \(inFlight.count) in flight, \
            \(repeated.subtracting(inFlight).sorted().prefix(5)) repeated but not in flight, \
            \(inFlight.subtracting(repeated).sorted().prefix(5)) in flight but not repeated; requests: \
            \(requests.map { "#\($0.sequence) \($0.status) \($0.records.count) \($0.records.first?.message ?? "-")" })
            """)
        for first in firstAttempts {
            let key = first.headers.first(name: "Idempotency-Key")
            #expect(key != nil)
            let later = requests.filter {
                $0.sequence > first.sequence && $0.headers.first(name: "Idempotency-Key") == key
            }
            #expect(later.contains { $0.recordIDs == first.recordIDs }, "the key comes again with the same records")
        }
    }

    /// The messages a receiver keeps when it drops every record whose id it has taken before.
    private static func deduplicated(_ requests: [LogReceiver.Request]) -> [String] {
        let deduplicator = RecordDeduplicator()
        return requests.sorted { $0.sequence < $1.sequence }.flatMap { request in
            let repeats = deduplicator.repeats(in: request)
            return request.records.enumerated().filter { !repeats.contains($0.offset) }.map(\.element.message)
        }
    }
}
