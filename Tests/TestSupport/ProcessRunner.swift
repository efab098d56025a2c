import Foundation

/// Runs a built executable of this package (found next to the test bundle) and collects what it printed.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

public enum Executables {
    /// The build products directory (`.build/debug` or `.build/release`).
    public static var directory: URL {
        var url = Bundle.main.bundleURL
        // xctest bundles live in the products directory; swift-testing runs from the same place.
        for candidate in [url, url.deletingLastPathComponent()] {
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("adapt").path) { return candidate }
        }
        url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("adapt").path) { return url }
            url.deleteLastPathComponent()
        }
        return Bundle.main.bundleURL
    }

    public static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Runs `name` with `arguments` and waits; stdin is empty unless `input` is given.
    @discardableResult
    public static func run(_ name: String, _ arguments: [String], environment: [String: String] = [:],
                           input: String? = nil) throws -> ProcessResult {
        try run(executableAt: url(name), arguments, environment: environment, input: input)
    }

    /// Runs the program at `executable` (a shell, say, that starts one of ours) as `run` does.
    @discardableResult
    public static func run(executableAt executable: URL, _ arguments: [String], environment: [String: String] = [:],
                           input: String? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inp
        try process.run()
        if let input { inp.fileHandleForWriting.write(Data(input.utf8)) }
        try inp.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let stderrData = LockedBox(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            stderrData.set(err.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus,
                             stdout: String(decoding: stdoutData, as: UTF8.self),
                             stderr: String(decoding: stderrData.get(), as: UTF8.self))
    }
}

/// A value shared between threads under a lock.
public final class LockedBox<Value>: @unchecked Sendable {  // every access holds `lock`
    private var value: Value
    private let lock = NSLock()
    public init(_ value: Value) { self.value = value }
    public func get() -> Value { lock.withLock { value } }
    public func set(_ newValue: Value) { lock.withLock { value = newValue } }
    public func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
