import Foundation
import Synchronization

/// Runs the real binaries (logshipd, logctl, logger) and collects what they print.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

public enum Binaries {
    /// The directory holding the test bundle, where SwiftPM also puts the `logshipd` and `logctl` executables.
    public static var directory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    public static var logshipd: String { directory.appendingPathComponent("logshipd").path }
    public static var logctl: String { directory.appendingPathComponent("logctl").path }
}

/// A started child process.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: Process is used from the test task only; the exit status arrives through `exited`, the output
    // through the collectors.
    public let process = Process()
    private let output: OutputCollector
    private let error: OutputCollector
    private let exited: AsyncStream<Int32>
    private let exitContinuation: AsyncStream<Int32>.Continuation

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil) throws {
        (exited, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let outputPipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        let input = Pipe()
        process.standardInput = input
        let continuation = exitContinuation
        process.terminationHandler = { process in
            continuation.yield(process.terminationStatus)
            continuation.finish()
        }
        try process.run()
        output = OutputCollector(outputPipe)
        error = OutputCollector(errorPipe)
        if let stdin {
            // A child that exits before reading everything (refusing its input) makes this fail with EPIPE;
            // what it printed and its status tell the test why.
            try? input.fileHandleForWriting.write(contentsOf: stdin)
        }
        try input.fileHandleForWriting.close()
    }

    public var pid: Int32 { process.processIdentifier }

    /// Whether the process has not exited yet.
    public var isRunning: Bool { process.isRunning }

    /// What the process has written to stderr so far.
    public var standardErrorSoFar: String { error.text }

    /// Waits for the process to exit, at most `timeout`; kills it and throws if it does not.
    public func wait(within timeout: Duration = .seconds(60)) async throws -> ProcessResult {
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
        // The pipes end once every process holding them has closed them.
        try await waitUntil(within: .seconds(10)) { self.output.isComplete && self.error.isComplete }
        return ProcessResult(status: status, standardOutput: output.text, standardError: error.text)
    }

    public func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }
}

/// Reads a pipe to its end on a thread of its own, so a test can look at what a running process has printed.
private final class OutputCollector: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var isComplete = false
    }

    private let state = Mutex(State())

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                state.withLock { $0.bytes += buffer[..<count] }
            }
            state.withLock { $0.isComplete = true }
            try? handle.close()
        }
    }

    var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }

    var isComplete: Bool { state.withLock { $0.isComplete } }
}

/// Runs a command to completion.
public func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil)
    async throws -> ProcessResult
{
    try await ChildProcess(executable, arguments, environment: environment, stdin: stdin).wait()
}

/// A helper command a test relies on (openssl, journalctl, python) that did not succeed.
public struct CommandFailed: Error, CustomStringConvertible {
    public var description: String

    public init(_ command: String, _ result: ProcessResult) {
        description = "\(command) exited \(result.status): \(result.standardError)"
    }
}
