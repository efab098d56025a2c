import AdaptCore
import Foundation
import JobQueue
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// `adapt work`: runs one worker executable per step kind as a separate process and keeps them running.
///
/// - A worker that exits while the supervisor is not stopping is restarted after a backoff that doubles from
///   `initialBackoff` up to `maximumBackoff` per kind (reset once a worker has stayed up for a minute), so a
///   worker that crashes at start does not spin. The jobs it held are taken back at once (the attempt counts,
///   and the event says how it died) rather than after their lease, which is minutes for train and eval.
/// - Each worker holds the read end of a pipe whose write end only the supervisor has (close-on-exec), and
///   exits when it reads end of file: the kernel closes that end however the supervisor dies, SIGKILL
///   included, so workers never outlive it. (`PR_SET_PDEATHSIG` would need code between fork and exec, which
///   Foundation's `Process` does not run, and it fires when the spawning *thread* exits, which in a pool of
///   threads is not the supervisor's death.)
/// - SIGINT/SIGTERM to the supervisor are forwarded to every worker (first: finish or yield the running step;
///   second: release it now); after `killAfter` a worker still alive gets SIGKILL, and its jobs are taken back.
/// - With `exitWhenIdle` the supervisor stops its workers and returns once no step of the supervised kinds is
///   ready or running, or will be within `idleHorizon` (see `JobQueue.outlook`); it says what still waits for a
///   later time. The workers are started without `--exit-when-idle` themselves, so one finishing early never
///   looks like a crash.
public final class WorkerSupervisor: Sendable {
    public struct Options: Sendable {
        public var kinds: [String]
        /// Where the `adapt-<kind>-worker` executables are.
        public var directory: URL
        /// Passed to every worker (`--state DIR`, `--durability …`).
        public var workerArguments: [String]
        /// Set in every worker's environment over the supervisor's own (`ADAPT_DATABASE`: kept out of the
        /// arguments, which any user of the machine can read, as a URL may hold a password).
        public var workerEnvironment: [String: String] = [:]
        public var exitWhenIdle: Bool
        /// With `exitWhenIdle`: work due within this many milliseconds still counts as work to wait for.
        public var idleHorizonMilliseconds: Int64 = JobQueue.WorkOutlook.defaultHorizonMilliseconds
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
        /// The lease owner the worker claims under (`WorkerExecutable.owner`): how its jobs are found.
        var owner: String
        /// The supervisor's end of the worker's lifeline; closed once the worker is gone.
        var lifeline: Int32
        var startedAt: ContinuousClock.Instant
        var backoff: Duration
        var restartAt: ContinuousClock.Instant?
        var reaped = false
    }

    private struct State {
        var children: [String: Child] = [:]
        var stopRequests = 0
        var spawns = 0
        var summary = Summary()
    }

    /// The variable naming the workers' PostgreSQL database (`workerEnvironment`).
    public static let databaseVariable = "ADAPT_DATABASE"

    public let options: Options
    private let queue: any WorkerEngine
    private let state = Locked(State())

    public init(options: Options, queue: any WorkerEngine) {
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
        takeBackOrphanedJobs()
        for kind in options.kinds { try start(kind) }
        var stopDeadline: ContinuousClock.Instant?
        var unreachableSince: ContinuousClock.Instant?
        while true {
            try await Task.sleep(for: .milliseconds(20))
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
            if options.exitWhenIdle {
                // A PostgreSQL server restarting or out of reach is waited out, as the workers wait it out.
                let outlook: JobQueue.WorkOutlook
                do {
                    outlook = try queue.outlook(kinds: options.kinds, horizonMilliseconds: options.idleHorizonMilliseconds)
                    if let since = unreachableSince {
                        options.log("database reachable again after \(since.duration(to: .now).components.seconds) s")
                        unreachableSince = nil
                    }
                } catch where queue.isUnreachable(error) {
                    if unreachableSince == nil {
                        options.log("database unreachable (\(error)); retrying while the workers run")
                        unreachableSince = .now
                    }
                    try await Task.sleep(for: .milliseconds(500))
                    try? queue.reconnect()
                    continue
                }
                if !outlook.hasWorkNow {
                    options.log(outlook.waiting == 0 ? "no work left; stopping workers"
                                : "no work ready or running; \(outlook.waitingDescription(now: queue.clock.nowMilliseconds())); stopping workers")
                    requestStop()
                }
            }
        }
        // Workers that stopped on request released their jobs themselves; one killed above did not.
        for kind in options.kinds.sorted() { takeBackJobs(of: kind) }
        return state.withLock { $0.summary }
    }

    /// Takes back the jobs of workers that exited, and restarts them after their backoff.
    private func superviseChildren() throws {
        let now = ContinuousClock.now
        var toStart: [String] = []
        var died: [String] = []
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
                died.append(kind)
            }
        }
        for kind in died.sorted() { takeBackJobs(of: kind) }
        for kind in toStart.sorted() {
            state.withLock { $0.summary.restarts[kind, default: 0] += 1 }
            try start(kind)
        }
    }

    /// Once a worker is known to be dead: closes its lifeline and hands its jobs back (see `releaseLeases`).
    /// A database error is logged, not thrown: the leases then expire and are rescued as before.
    private func takeBackJobs(of kind: String) {
        guard let child = state.withLock({ s -> Child? in
            guard var child = s.children[kind], !child.reaped, !child.process.isRunning else { return nil }
            child.reaped = true
            s.children[kind] = child
            return child
        }) else { return }
        close(child.lifeline)
        let status = child.process.terminationStatus
        let cause = child.process.terminationReason == .uncaughtSignal ? "killed by signal \(status)" : "exit status \(status)"
        do {
            for rescued in try queue.releaseLeases(heldBy: child.owner, cause: "pid \(child.process.processIdentifier) \(cause)") {
                options.log("\(rescued.job) of the dead \(kind) worker is \(rescued.state) again (attempt \(rescued.attempt) counted)")
            }
        } catch {
            if queue.isUnreachable(error) { try? queue.reconnect() }
            options.log("could not take back the jobs of \(kind) worker \(child.process.processIdentifier) (\(error)); they wait for their lease to expire")
        }
    }

    /// Steps still leased to workers of an earlier supervisor of this state that died with it (a SIGKILL to
    /// the whole process group leaves them no time to release their steps). This supervisor holds the state's
    /// lock, so that one is gone; a worker whose pid is gone too cannot finish its step, which is handed back
    /// now rather than after its lease. A worker still alive is left to release its own (it does once it reads
    /// end of file), and a pid taken by another process since only means waiting for the lease as before.
    private func takeBackOrphanedJobs() {
        let host = ProcessInfo.processInfo.hostName
        let ownTag = "work-\(getpid())."
        do {
            let owners = Set(try queue.jobs(matching: .init(state: .running, limit: 100_000)).compactMap(\.leaseOwner))
            for owner in owners.sorted() {
                guard let parsed = WorkerLeaseOwner.parse(owner), parsed.host == host, parsed.tag.hasPrefix("work-"),
                      !parsed.tag.hasPrefix(ownTag), kill(parsed.pid, 0) != 0, errno == ESRCH else { continue }
                for rescued in try queue.releaseLeases(heldBy: owner, cause: "pid \(parsed.pid) gone with its supervisor") {
                    options.log("\(rescued.job), left by a worker that died with an earlier supervisor, is \(rescued.state) again "
                                + "(attempt \(rescued.attempt) counted)")
                }
            }
        } catch {
            options.log("could not look for steps left by an earlier supervisor's workers (\(error)); they wait for their leases to expire")
        }
    }

    private func start(_ kind: String) throws {
        let (tag, host) = state.withLock { s -> (String, String) in
            s.spawns += 1
            return ("work-\(getpid()).\(s.spawns)", ProcessInfo.processInfo.hostName)
        }
        // Both ends close-on-exec: the child gets the read end as its standard input (dup2 clears the flag
        // there), and no other worker inherits either end, so only the supervisor's death closes the pipe.
        // (pipe2 is not visible from Swift; this process starts no other program between the two calls.)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw CoreError.fileUnwritable(path: "a pipe to the \(kind) worker", reason: String(cString: strerror(errno)))
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let process = Process()
        process.executableURL = Self.executable(kind: kind, in: options.directory)
        process.arguments = options.workerArguments + ["--lease-owner-tag", tag, "--exit-when-stdin-closes"]
        if !options.workerEnvironment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(options.workerEnvironment) { _, given in given }
        }
        // Workers share the supervisor's stderr: their logs interleave by line.
        process.standardInput = FileHandle(fileDescriptor: ends[0], closeOnDealloc: false)
        do {
            try process.run()
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        close(ends[0])
        let owner = WorkerLeaseOwner.name(host: host, tag: tag, pid: process.processIdentifier)
        state.withLock { s in
            let backoff = s.children[kind]?.backoff ?? options.initialBackoff
            s.children[kind] = Child(process: process, owner: owner, lifeline: ends[1], startedAt: ContinuousClock.now,
                                     backoff: backoff, restartAt: nil)
            s.summary.started[kind, default: 0] += 1
        }
        options.log("started \(kind) worker \(process.processIdentifier)")
    }
}
