import Foundation

/// A built executable of this package running in the background, for tests that send it real signals.
/// Its stdout and stderr go to files (never a pipe that could fill up and stall it).
public final class RunningProcess: @unchecked Sendable {  // `process` is only read after `init`
    private let process: Process
    public let stdoutURL: URL
    public let stderrURL: URL

    public var pid: Int32 { process.processIdentifier }

    init(process: Process, stdoutURL: URL, stderrURL: URL) {
        self.process = process
        self.stdoutURL = stdoutURL
        self.stderrURL = stderrURL
    }

    /// Sends `signal` (SIGTERM, SIGKILL, SIGSTOP, SIGCONT, …).
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    public var isRunning: Bool { process.isRunning }

    /// Waits for the process to end and returns its exit status (or the signal that ended it, plus 128).
    @discardableResult
    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    public var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

extension Executables {
    /// Starts `name` with `arguments` without waiting; output goes to files under `directory`.
    public static func start(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                             outputIn directory: URL) throws -> RunningProcess {
        try start(executableAt: url(name), arguments, environment: environment, outputIn: directory)
    }

    /// Starts the program at `executable` (`ip netns exec`, say, that starts one of ours) as `start` does, in
    /// `workingDirectory` when one is given.
    public static func start(executableAt executable: URL, _ arguments: [String], environment: [String: String] = [:],
                             workingDirectory: URL? = nil, outputIn directory: URL) throws -> RunningProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        let name = executable.lastPathComponent
        let tag = UUID().uuidString.prefix(8)
        let out = directory.appendingPathComponent("\(name)-\(tag).out")
        let err = directory.appendingPathComponent("\(name)-\(tag).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return RunningProcess(process: process, stdoutURL: out, stderrURL: err)
    }
}

extension Executables {
    /// `run`, awaited on a dispatch thread: a test that waits for a child process does not hold one of the
    /// few cooperative threads that in-process workers of other tests need.
    public static func runAsync(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                                input: String? = nil) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try run(name, arguments, environment: environment, input: input) })
            }
        }
    }
}

extension RunningProcess {
    /// `wait()`, awaited on a dispatch thread (see `Executables.runAsync`).
    @discardableResult
    public func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: self.wait()) }
        }
    }
}
