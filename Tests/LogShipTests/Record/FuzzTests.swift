import Foundation
import Testing
import LogShipTestKit

/// A short run of the libFuzzer target that `make test` builds (`make fuzz` runs it for longer).
@Suite("Fuzzing")
struct FuzzTests {

    @Test("the parsers, the stream framing, the control requests and the journal entry mapping survive 10 000 fuzzed inputs with their properties intact")
    func shortRun() async throws {
        let fuzzer = packageRoot.appendingPathComponent(".build-fuzz/debug/logship-fuzz").path
        try #require(
            FileManager.default.isExecutableFile(atPath: fuzzer),
            "no fuzzer at \(fuzzer): `make test` builds it (make fuzz-build)")
        let corpus = try TemporaryDirectory.make()
        let seeds = packageRoot.appendingPathComponent("Tests/FuzzCorpus").path
        let fuzzing = try await ChildProcess.start(
            fuzzer, ["-runs=10000", "-seed=1", "-artifact_prefix=\(corpus)/", corpus, seeds],
            environment: ["SWIFT_BACKTRACE": "enable=no"])
        let result = try await fuzzing.wait(within: .seconds(600))
        #expect(result.status == 0, "\(result.standardError.suffix(3000))")
        #expect(result.standardError.contains("Done 10000 runs"), "\(result.standardError.suffix(1000))")
        try? FileManager.default.removeItem(atPath: corpus)
    }
}
