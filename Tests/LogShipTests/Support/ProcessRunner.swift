import Foundation

/// Runs the real binaries (logshipd, logctl, logger) and collects what they print.
struct ProcessResult: Sendable {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

enum Binaries {
    /// The directory holding the test bundle, where SwiftPM also puts the `logshipd` and `logctl` executables.
    static var directory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    static var logshipd: String { directory.appendingPathComponent("logshipd").path }
    static var logctl: String { directory.appendingPathComponent("logctl").path }
}

/// A started child process.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: Process is used from the test task only; the exit status arrives through `exited`.
    let process = Process()
    private let output = Pipe()
    private let error = Pipe()
    private let exited: AsyncStream<Int32>
    private let exitContinuation: AsyncStream<Int32>.Continuation

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil) throws {
        (exited, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = output
        process.standardError = error
        let input = Pipe()
        process.standardInput = input
        let continuation = exitContinuation
        process.terminationHandler = { process in
            continuation.yield(process.terminationStatus)
            continuation.finish()
        }
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(stdin)
        }
        try input.fileHandleForWriting.close()
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits for the process to exit, at most `timeout`; kills it and throws if it does not.
    func wait(within timeout: Duration = .seconds(30)) async throws -> ProcessResult {
        let exited = self.exited
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await status in exited { return status }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)  // the deadline, not synchronisation
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let status else {
            process.terminate()
            throw WaitTimeout(description: "\(process.executableURL?.lastPathComponent ?? "process") did not exit within \(timeout)")
        }
        return ProcessResult(
            status: status,
            standardOutput: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            standardError: String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }
}

/// Runs a command to completion.
func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil)
    async throws -> ProcessResult
{
    try await ChildProcess(executable, arguments, environment: environment, stdin: stdin).wait()
}
