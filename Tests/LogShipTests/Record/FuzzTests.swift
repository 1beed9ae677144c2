import Foundation
import Testing
import LogShipTestKit

/// A short run of the libFuzzer target that `make test` builds (`make fuzz` runs it for longer).
@Suite("Fuzzing")
struct FuzzTests {

    @Test("""
        the parsers, the stream framing, the control requests and the journal entry mapping survive 5 000 fuzzed \
        inputs with their properties intact
        """)
    func shortRun() async throws {
        let fuzzer = packageRoot.appendingPathComponent(".build-fuzz/debug/logship-fuzz").path
        try #require(
            FileManager.default.isExecutableFile(atPath: fuzzer),
            "no fuzzer at \(fuzzer): `make test` builds it (make fuzz-build)")
        let corpus = try TemporaryDirectory.make()
        let seeds = packageRoot.appendingPathComponent("Tests/FuzzCorpus").path
        let fuzzing = try await ChildProcess.start(
            fuzzer, ["-runs=5000", "-seed=1", "-artifact_prefix=\(corpus)/", corpus, seeds],
            environment: ["SWIFT_BACKTRACE": "enable=no"])
        // The debug build with the sanitizers runs about 70 inputs a second alone; beside the whole suite on two cores,
        // a third of that or less.
        let result = try await fuzzing.wait(within: .seconds(1_200))
        #expect(result.status == 0, "\(result.standardError.suffix(3000))")
        #expect(result.standardError.contains("Done 5000 runs"), "\(result.standardError.suffix(1000))")
        try? FileManager.default.removeItem(atPath: corpus)
    }
}
