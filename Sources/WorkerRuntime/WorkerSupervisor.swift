import AdaptCore
import Foundation
import JobQueue
import Storage
import Synchronization

/// `adapt work`: runs one worker executable per step kind as a separate process and keeps them running.
///
/// - A worker that exits while the supervisor is not stopping is restarted after a backoff that doubles from
///   `initialBackoff` up to `maximumBackoff` per kind (reset once a worker has stayed up for a minute), so a
///   worker that crashes at start does not spin.
/// - SIGINT/SIGTERM to the supervisor are forwarded to every worker (first: finish or yield the running step;
///   second: release it now); after `killAfter` a worker still alive gets SIGKILL, whose step the lease rescue
///   hands to the next worker.
/// - With `exitWhenIdle` the supervisor stops its workers and returns once the queue has no pending, ready,
///   running or retry-waiting step of the supervised kinds. The workers are then started without
///   `--exit-when-idle` themselves, so one finishing early never looks like a crash.
public final class WorkerSupervisor: Sendable {
    public struct Options: Sendable {
        public var kinds: [String]
        /// Where the `adapt-<kind>-worker` executables are.
        public var directory: URL
        /// Passed to every worker (`--state DIR`, `--durability …`).
        public var workerArguments: [String]
        public var exitWhenIdle: Bool
        public var initialBackoff: Duration = .milliseconds(250)
        public var maximumBackoff: Duration = .seconds(30)
        public var killAfter: Duration = .seconds(30)
        public var log: @Sendable (String) -> Void

        public init(kinds: [String], directory: URL, workerArguments: [String], exitWhenIdle: Bool,
                    log: @escaping @Sendable (String) -> Void) {
            self.kinds = kinds
            self.directory = directory
            self.workerArguments = workerArguments
            self.exitWhenIdle = exitWhenIdle
            self.log = log
        }
    }

    /// What happened to the workers while the supervisor ran.
    public struct Summary: Sendable, Equatable, Encodable {
        public var started: [String: Int] = [:]
        public var restarts: [String: Int] = [:]
        public var killed: Int = 0
    }

    private struct Child {
        var process: Process
        var startedAt: ContinuousClock.Instant
        var backoff: Duration
        var restartAt: ContinuousClock.Instant?
    }

    private struct State {
        var children: [String: Child] = [:]
        var stopRequests = 0
        var summary = Summary()
    }

    public let options: Options
    private let queue: JobQueue
    private let state = Mutex(State())

    public init(options: Options, queue: JobQueue) {
        self.options = options
        self.queue = queue
    }

    /// The executable of a kind: `adapt-<kind>-worker` in `directory`.
    public static func executable(kind: String, in directory: URL) -> URL {
        directory.appendingPathComponent("adapt-\(kind)-worker")
    }

    /// First call: forward SIGTERM (workers finish or yield their step). Second: forward it again (release now).
    public func requestStop() {
        let (count, processes) = state.withLock { s -> (Int, [Process]) in
            s.stopRequests += 1
            return (s.stopRequests, s.children.values.map(\.process))
        }
        options.log(count == 1 ? "stopping workers (running steps finish or yield at a checkpoint)" : "stopping workers now")
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    private var isStopping: Bool { state.withLock { $0.stopRequests > 0 } }

    /// Starts the workers and supervises them until stopped (or idle); returns what happened.
    public func run() async throws -> Summary {
        for kind in options.kinds {
            let url = Self.executable(kind: kind, in: options.directory)
            guard FileManager.default.isExecutableFile(atPath: url.path) else {
                throw CoreError.fileUnreadable(path: url.lastPathComponent,
                                               reason: "no such worker executable next to adapt; build all products with 'swift build'")
            }
        }
        for kind in options.kinds { try start(kind) }
        var stopDeadline: ContinuousClock.Instant?
        while true {
            try await Task.sleep(for: .milliseconds(50))
            if isStopping {
                let deadline = stopDeadline ?? ContinuousClock.now + options.killAfter
                stopDeadline = deadline
                let alive = state.withLock { $0.children.values.map(\.process).filter(\.isRunning) }
                if alive.isEmpty { break }
                if ContinuousClock.now >= deadline {
                    for process in alive {
                        options.log("worker \(process.processIdentifier) did not stop in time; killing it")
                        kill(process.processIdentifier, SIGKILL)
                    }
                    state.withLock { $0.summary.killed += alive.count }
                    stopDeadline = ContinuousClock.now + .seconds(3600)
                }
                continue
            }
            try superviseChildren()
            if options.exitWhenIdle, try !queue.hasUnfinishedWork(kinds: options.kinds) {
                options.log("no work left; stopping workers")
                requestStop()
            }
        }
        return state.withLock { $0.summary }
    }

    /// Restarts workers that exited, after their backoff.
    private func superviseChildren() throws {
        let now = ContinuousClock.now
        var toStart: [String] = []
        state.withLock { s in
            for (kind, var child) in s.children {
                if child.process.isRunning { continue }
                if let at = child.restartAt {
                    if now >= at { toStart.append(kind) }
                    continue
                }
                let status = child.process.terminationStatus
                let reason = child.process.terminationReason == .uncaughtSignal ? "signal \(status)" : "status \(status)"
                // A worker that ran for a minute was healthy: its next crash starts the backoff again.
                if now - child.startedAt > .seconds(60) { child.backoff = options.initialBackoff }
                child.restartAt = now + child.backoff
                options.log("\(kind) worker \(child.process.processIdentifier) exited (\(reason)); restarting in \(child.backoff)")
                child.backoff = min(child.backoff * 2, options.maximumBackoff)
                s.children[kind] = child
            }
        }
        for kind in toStart.sorted() {
            state.withLock { $0.summary.restarts[kind, default: 0] += 1 }
            try start(kind)
        }
    }

    private func start(_ kind: String) throws {
        let process = Process()
        process.executableURL = Self.executable(kind: kind, in: options.directory)
        process.arguments = options.workerArguments
        // Workers share the supervisor's stderr and stdin-less: their logs interleave by line.
        process.standardInput = FileHandle.nullDevice
        try process.run()
        state.withLock { s in
            let backoff = s.children[kind]?.backoff ?? options.initialBackoff
            s.children[kind] = Child(process: process, startedAt: ContinuousClock.now, backoff: backoff, restartAt: nil)
            s.summary.started[kind, default: 0] += 1
        }
        options.log("started \(kind) worker \(process.processIdentifier)")
    }
}
