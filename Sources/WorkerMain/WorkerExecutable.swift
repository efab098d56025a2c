import AdaptCore
import CommandLineKit
import CommandLineState
import Foundation
import JobQueue
import Steps
import Storage
import WorkerRuntime

/// The shared `main` of the five worker executables (`adapt-prune-worker` …): each claims the steps of one
/// kind from the state directory's job table, or from the PostgreSQL database `ADAPT_DATABASE` names, with the
/// WorkerRuntime `Worker` loop (heartbeats, fenced writes, idle wait) and runs the matching step body.
///
/// SIGINT/SIGTERM: the first lets the running step finish (train stops at its next checkpoint), the second
/// releases it at once; either way nothing is lost. Exit 0 when stopped or idle, 1 on failure (a --state directory
/// that does not exist among them), 2 on usage.
public enum WorkerExecutable {
    /// A worker is a tool of one command, so every option is parsed where global ones are.
    static func options(kind: String) -> [OptionSpec] {
        StateOptions.all + [exitWhenIdle(kind).spec, lease(kind).spec, verbose.spec, leaseOwnerTag.spec, exitWhenStdinCloses.spec]
    }

    static func exitWhenIdle(_ kind: String) -> Flag {
        Flag("exit-when-idle", help: "exit once no \(kind) step is ready, running or due within two minutes (later runs are not waited for)")
    }
    static func lease(_ kind: String) -> Option<Int> {
        Option("lease-ms", value: "MS", default: defaultLease(kind), in: ClaimRequest.leaseRange,
               help: "lease length, for every step when given (else the step's lease_seconds); heartbeats every third of it")
    }
    static let verbose = Flag("verbose", help: "log every claim and completion on stderr")
    static let leaseOwnerTag = Option<String?>(
        "lease-owner-tag", value: "TAG", default: nil,
        help: "name this worker's leases host/TAG/pid (adapt work passes one per worker it starts)"
    ) { tag in
        guard WorkerLeaseOwner.isValidTag(tag) else {
            throw UsageError("must be 1 to 64 printable ASCII characters without spaces or '/'")
        }
        return tag
    }
    static let exitWhenStdinCloses = Flag("exit-when-stdin-closes",
                                          help: "release running steps and exit when standard input reaches its end (how adapt work's workers die with it)")

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
            summary: "Runs the \(kind) steps of nightly runs from the state directory's job table, or from the PostgreSQL "
                + "database ADAPT_DATABASE names (the state directory then holds this host's models and exports only).",
            globalOptions: options(kind: kind), commands: [command])
        return await tool.main(arguments)
    }

    static func run(kind: String, _ a: ParsedArguments) async throws {
        let state = try StateOptions.stateDirectory(a)
        let durability = try StateOptions.durability(a)
        // A worker opens its state as `adapt worker` does (StateAccess): a mistyped --state (a directory nobody made)
        // or a directory of another program is refused before anything is created. `adapt work` makes the state
        // before it starts its workers, so a directory without a database yet is accepted and the job tables are made.
        let label = "\(kind)-worker[\(ProcessInfo.processInfo.processIdentifier)]"
        let log: @Sendable (String) -> Void = { Console.error("\(label): \($0)") }
        // On PostgreSQL the job tables, the replay buffer, the registry and every blob are the server's, so workers
        // on other hosts see what this one writes; the state directory keeps only this host's models and exports.
        if let url = ProcessInfo.processInfo.environment[WorkerSupervisor.databaseVariable], !url.isEmpty {
            guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
                throw UsageError("\(WorkerSupervisor.databaseVariable) must be a postgres://USER@HOST[:PORT]/DATABASE URL")
            }
            try StateAccess.waitingForWorkElsewhere(state)
            let queue = try PostgresJobQueue(connectionString: url, clock: SystemClock())
            let blobs = try PostgresBlobStore(connection: queue.connection)
            let environment = StepEnvironment(state: state, connection: queue.connection, blobs: blobs, clock: OffsetClock.stepClock(),
                                              deviceRoot: StepEnvironment.deviceRoot(), log: log)
            try await serve(kind: kind, queue: queue, environment: environment, a, log: log)
        } else {
            let database = try StateAccess.waitingForWork(state, durability: durability)
            let environment = StepEnvironment(state: state, database: database, clock: OffsetClock.stepClock(),
                                              deviceRoot: StepEnvironment.deviceRoot(), log: log)
            try await serve(kind: kind, queue: try JobQueue(database: database), environment: environment, a, log: log)
        }
    }

    /// Claims and runs the steps of `kind` from `queue`, whose connection `environment` shares.
    static func serve<Engine: WorkerEngine>(kind: String, queue: Engine, environment: StepEnvironment, _ a: ParsedArguments,
                                            log: @escaping @Sendable (String) -> Void) async throws {
        let leaseLength = try a[lease(kind)]
        let tag = try a[leaseOwnerTag]
        let logsEveryStep = a[verbose]
        var options = WorkerOptions(
            kinds: [kind],
            owner: WorkerLeaseOwner.name(host: ProcessInfo.processInfo.hostName, tag: tag,
                                         pid: ProcessInfo.processInfo.processIdentifier),
            leaseMilliseconds: Int64(leaseLength), leaseOverridesJobs: a.given(lease(kind)),
            exitWhenIdle: a[exitWhenIdle(kind)],
            log: { line in
                if logsEveryStep || !(line.hasPrefix("claimed ") || line.hasPrefix("completed ")) { log(line) }
            })
        // A step past its timeout_seconds is interrupted as a cancelled run is (train stops at its next step); one deaf
        // to it cannot be stopped from inside the process, so the process ends (exit 3): its lease runs out, or `adapt
        // work` takes it back at once, and the attempt counts as timed out; the supervisor starts a fresh worker.
        options.hungBody = { id in
            log("\(id) ignored its timeout; exiting so that a fresh worker takes over")
            exit(3)
        }
        let stopping = StopFlag()
        // A step asks for other kernels (a checkpoint's core type): the worker stops claiming, records the
        // step's deferral, and executes itself again pinned (same pid, arguments and standard input).
        let repin = RepinRequest()
        let body = StepRunner.jobBody(environment: environment, queue: queue, isStopping: { stopping.isSet },
                                      reexecute: { coreType in
                                          // The stop request's own line follows; this one says why.
                                          log("claiming no more: executing again with OpenBLAS core type "
                                              + "\(coreType ?? "of adapt's choice") once this step's deferral is recorded")
                                          repin.set(coreType)
                                          repin.stopWorker()
                                      })
        let worker = Worker(queue: queue, options: options, body: body)
        repin.onStop { [weak worker] in worker?.requestStop() }
        let signals = SignalHandlers { [weak worker] _ in
            stopping.set()
            worker?.requestStop()
        }
        if a[exitWhenStdinCloses] {
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
        if let coreType = repin.requested, !stopping.isSet {
            log("executing again with OpenBLAS core type \(coreType ?? "of adapt's choice")")
            let code = StepProcess.reexecute(pinning: coreType)
            log("could not execute itself again (errno \(code)); the step waits for the next worker")
            throw ExitCode(1)
        }
    }
}

/// A step's request to execute the worker again with other OpenBLAS kernels (`StepContext.reexecute`).
final class RepinRequest: Sendable {
    private let value = Locked<(asked: Bool, coreType: String?)>((false, nil))
    private let stopBox = Locked<(@Sendable () -> Void)?>(nil)
    /// Asks the worker to stop claiming (`stopWorker` is given once the worker exists).
    func stopWorker() {
        let stop = stopBox.withLock { $0 }
        stop?()
    }
    func onStop(_ stop: @escaping @Sendable () -> Void) { stopBox.withLock { $0 = stop } }
    /// nil when none was asked for; `.some(nil)` for adapt's own choice.
    var requested: String?? { value.withLock { $0.asked ? .some($0.coreType) : nil } }
    func set(_ coreType: String?) { value.withLock { $0 = (true, coreType) } }
}

/// Set once the worker was asked to stop; read by long steps at their safe points.
final class StopFlag: Sendable {
    private let value = Locked(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
