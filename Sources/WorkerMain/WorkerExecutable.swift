import AdaptCore
import CommandLineKit
import Foundation
import JobQueue
import Steps
import Storage
import Synchronization
import WorkerRuntime

/// The shared `main` of the five worker executables (`adapt-prune-worker` …): each claims the steps of one
/// kind from the state directory's job table with the WorkerRuntime `Worker` loop (heartbeats, fenced writes,
/// idle wait on `PRAGMA data_version`) and runs the matching step body.
///
/// SIGINT/SIGTERM: the first lets the running step finish (train stops at its next checkpoint), the second
/// releases it at once; either way nothing is lost. Exit 0 when stopped or idle, 1 on failure, 2 on usage.
public enum WorkerExecutable {
    static func options(kind: String) -> [OptionSpec] {
        StateOptions.all + [
            .flag("exit-when-idle", help: "exit once no \(kind) step is ready, running or due within two minutes (later runs are not waited for)"),
            OptionSpec("lease-ms", value: "MS", help: "lease length, for every step when given (default: the step's lease_seconds, else \(defaultLease(kind))); heartbeats every third of it"),
            .flag("verbose", help: "log every claim and completion on stderr"),
            OptionSpec("lease-owner-tag", value: "TAG", help: "name this worker's leases host/TAG/pid (adapt work passes one per worker it starts)"),
            .flag("exit-when-stdin-closes", help: "release running steps and exit when standard input reaches its end (how adapt work's workers die with it)"),
        ]
    }

    /// Train and eval hold a step for minutes: a longer lease means fewer heartbeats (DESIGN.md defaults).
    static func defaultLease(_ kind: String) -> Int { kind == "train" || kind == "eval" ? 120_000 : 60_000 }

    /// Runs the worker for `kind` with the process's arguments; returns the exit code.
    public static func main(kind: String, arguments: [String] = Array(CommandLine.arguments.dropFirst())) async -> Int32 {
        StepProcess.prepare()
        let command = Command("", summary: "claim and run the pipeline's \(kind) steps until stopped") { invocation in
            try await run(kind: kind, invocation.global)
        }
        let tool = CommandLineTool(
            name: "adapt-\(kind)-worker",
            summary: "Runs the \(kind) steps of nightly runs from the state directory's job table.",
            globalOptions: options(kind: kind), commands: [command])
        return await tool.main(arguments)
    }

    static func run(kind: String, _ a: ParsedArguments) async throws {
        let state = try StateOptions.stateDirectory(a)
        let durability = try StateOptions.durability(a)
        let lease = try a.int("lease-ms", default: defaultLease(kind), in: ClaimRequest.leaseRange)
        let tag = a.string("lease-owner-tag")
        if let tag, !WorkerLeaseOwner.isValidTag(tag) {
            throw UsageError("--lease-owner-tag must be 1 to 64 printable ASCII characters without spaces or '/'")
        }
        if try state.createPrivate().paths > 0 {
            Console.error("adapt-\(kind)-worker: made paths under \(state.root.path) private (directories 0700, files 0600)")
        }
        let database = try Database(path: state.database.path, durability: durability)
        let queue = try JobQueue(database: database)
        let verbose = a.flag("verbose")
        let label = "\(kind)-worker[\(ProcessInfo.processInfo.processIdentifier)]"
        let log: @Sendable (String) -> Void = { Console.error("\(label): \($0)") }
        let environment = StepEnvironment(state: state, database: database, clock: OffsetClock.stepClock(),
                                          deviceRoot: StepEnvironment.deviceRoot(), log: log)
        let options = WorkerOptions(
            kinds: [kind],
            owner: WorkerLeaseOwner.name(host: ProcessInfo.processInfo.hostName, tag: tag,
                                         pid: ProcessInfo.processInfo.processIdentifier),
            leaseMilliseconds: Int64(lease), leaseOverridesJobs: a.has("lease-ms"),
            exitWhenIdle: a.flag("exit-when-idle"),
            log: { line in
                if verbose || !(line.hasPrefix("claimed ") || line.hasPrefix("completed ")) { log(line) }
            })
        let stopping = StopFlag()
        let body = StepRunner.jobBody(environment: environment, queue: queue, isStopping: { stopping.isSet })
        let worker = Worker(queue: queue, options: options, body: body)
        let signals = SignalHandlers { [weak worker] _ in
            stopping.set()
            worker?.requestStop()
        }
        if a.flag("exit-when-stdin-closes") {
            SupervisorLifeline.watchStandardInput(grace: .seconds(3)) { [weak worker] in
                log("standard input closed (the supervisor is gone): releasing running steps and exiting")
                stopping.set()
                worker?.requestStop()
                worker?.requestStop()
            }
        }
        let summary = try await worker.run()
        withExtendedLifetime(signals) {}
        log("\(summary.succeeded) succeeded, \(summary.failed) failed (will retry), \(summary.discarded) discarded, "
            + "\(summary.snoozed) deferred, \(summary.released) released, \(summary.leaseLost) lost their lease")
    }
}

/// Set once the worker was asked to stop; read by long steps at their safe points.
final class StopFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
