import AdaptCore
import Foundation
import JobQueue
import Pipelines
import Registry
import Report
import Steps
import Storage

/// `adapt report`: gathers what the job history and the registry hold about a run or a lineage into the data the
/// page is drawn from (`ReportData`), and renders the page. It reads only; nothing is computed that the database
/// does not hold, apart from the smoothed loss (the moving average `adapt work` shows).
public enum ReportService {
    /// What a report is about.
    public enum Subject: Sendable {
        /// A run; nil: the newest run.
        case run(RunID?)
        case lineage(Lineage)
    }

    /// A lineage named by `--lineage` has no nightly run and no registered version.
    public struct UnknownLineage: Error, CustomStringConvertible {
        public let lineage: String
        public var description: String {
            "lineage \(lineage) has no nightly run and no adapter version in this state; 'adapt runs' lists the runs, "
                + "'adapt registry list' the lineages"
        }
    }

    /// There is no run to report on.
    public struct NoRuns: Error, CustomStringConvertible {
        public var description: String { "this state has no run yet; enqueue one with 'adapt enqueue nightly --lineage L'" }
    }

    public static func gather(_ subject: Subject, from runs: RecordedRuns, includeText: Bool,
                              now: Int64 = SystemClock().nowMilliseconds()) throws -> ReportData {
        switch subject {
        case let .run(id):
            guard let id = try id ?? runs.queue.runs(limit: 1).first?.id else { throw NoRuns() }
            return try run(id, from: runs, includeText: includeText, now: now)
        case let .lineage(lineage):
            return try self.lineage(lineage.name, from: runs, now: now)
        }
    }

    /// The page for `data`: one self-contained HTML document.
    public static func html(_ data: ReportData) -> String { ReportPage.html(data) }

    // MARK: A run

    static func run(_ id: RunID, from runs: RecordedRuns, includeText: Bool, now: Int64) throws -> ReportData {
        let queue = runs.queue
        let record = try queue.run(id)
        let jobs = try queue.jobs(matching: .init(run: id, limit: Int.max)).sorted { $0.id < $1.id }
        let events = try queue.events(run: id, job: nil, afterID: 0, limit: Int.max)
        let byJob = Dictionary(grouping: events, by: \.jobID)
        let lineage = record.manifest["lineage"]?.stringValue
        let lanes = jobs.map { job in
            ReportJob(id: job.id.description, name: job.name, kind: job.kind, state: job.state.rawValue, maxAttempts: job.maxAttempts,
                      attempts: ReportAttempts.of(byJob[job.id] ?? [], origin: record.createdAt, now: now))
        }
        let train = jobs.first { $0.kind == StepKind.train.rawValue }
        let losses = train.flatMap { ReportLosses.of($0, events: byJob[$0.id] ?? []) }
        let gate = try ReportGateReading.of(eval: jobs.first { $0.kind == StepKind.eval.rawValue },
                                            promote: jobs.first { $0.kind == StepKind.promote.rawValue },
                                            lineage: lineage, includeText: includeText, blobs: runs.blobs)
        let (versions, moves) = try registry(lineage, in: runs)
        return ReportData(subject: .run, lineage: lineage, generatedAt: now, includesText: includeText, runs: [summary(record)],
                          jobs: lanes, losses: losses, gate: gate, versions: versions, pointerMoves: moves)
    }

    static func summary(_ run: RunRecord) -> ReportRun {
        ReportRun(id: run.id.description, name: run.name, kind: run.kind, state: run.state, night: run.manifest["night"]?.stringValue,
                  createdAt: run.createdAt, updatedAt: run.updatedAt, cancelledAt: run.cancelledAt,
                  jobsSucceeded: run.counts[.succeeded] ?? 0, jobsTotal: run.total)
    }

    // MARK: A lineage

    static func lineage(_ lineage: String, from recorded: RecordedRuns, now: Int64) throws -> ReportData {
        let queue = recorded.queue
        let runs = try queue.runs(limit: Int.max)
            .filter { $0.kind == NightlyRun.kind && $0.manifest["lineage"]?.stringValue == lineage }
            .sorted { ($0.manifest["night"]?.stringValue ?? "", $0.id) < ($1.manifest["night"]?.stringValue ?? "", $1.id) }
        let (versions, moves) = try registry(lineage, in: recorded)
        guard !runs.isEmpty || !versions.isEmpty else { throw UnknownLineage(lineage: lineage) }
        let nights = try runs.map { try night($0, queue: queue, lineage: lineage) }
        return ReportData(subject: .lineage, lineage: lineage, generatedAt: now, includesText: false, runs: runs.map(summary),
                          versions: versions, pointerMoves: moves, nights: nights)
    }

    static func night(_ run: RunRecord, queue: any JobEngine, lineage: String) throws -> ReportNight {
        let jobs = try queue.jobs(matching: .init(run: run.id, limit: Int.max))
        let eval = jobs.first { $0.kind == StepKind.eval.rawValue && $0.state == .succeeded }.flatMap { $0.output }
            .flatMap { try? EvalOutput(jobOutput: $0) }
        let promoteJob = jobs.first { $0.kind == StepKind.promote.rawValue && $0.state == .succeeded }
        let promote = promoteJob?.output.flatMap { try? PromoteOutput(jobOutput: $0) }
        let result: ReportNight.Result
        switch run.state {
        case "active": result = .active
        case "cancelled": result = .cancelled
        case "failed": result = .failed
        default: result = promote?.promoted == true ? .promoted : .refused
        }
        let version = promoteJob?.output?["registry"]?["version"]?.stringValue.map { "\(lineage)/\($0)" }
        let active = promoteJob?.output?["registry"]?["active_after"]?.stringValue.map { "\(lineage)/\($0)" }
        let start = jobs.first { $0.kind == StepKind.train.rawValue && $0.state == .succeeded }?.output?["init"]
        let evalOutput = jobs.first { $0.kind == StepKind.eval.rawValue && $0.state == .succeeded }?.output
        return ReportNight(runID: run.id.description, night: run.manifest["night"]?.stringValue ?? "", state: run.state, result: result,
                           outcome: eval?.outcome.rawValue, comparedWith: eval.map { $0.incumbent?.version ?? "base" },
                           candidateMeanNLL: eval?.candidateMeanNLL, incumbentMeanNLL: eval?.incumbentMeanNLL,
                           heldOutExamples: eval?.heldOutExamples, pValue: eval?.gate.report.pValue, version: version,
                           activeVersion: active, startedFrom: start?["from"]?.stringValue, startReason: start?["reason"]?.stringValue,
                           canary: evalOutput?["gate"]?["canary"].flatMap { $0 == .null ? nil : $0 })
    }

    // MARK: The registry

    /// The lineage's versions and pointer moves, oldest first (none for a run that names no lineage).
    static func registry(_ lineage: String?, in runs: RecordedRuns) throws -> ([ReportVersion], [ReportPointerMove]) {
        guard let lineage, let name = ShortIdentifier(lineage) else { return ([], []) }
        let registry = try AdapterRegistry(connection: runs.connection, blobs: runs.blobs)
        let entries = try RegistryService.list(registry, lineage: name)
        let versions = entries.map { entry in
            ReportVersion(version: entry.version.reference.description, digest: entry.version.adapterDigest.hex,
                          parent: entry.parent?.reference.description, active: entry.isActive, retired: entry.version.isRetired,
                          createdAt: entry.version.createdAt, heldOutMeanNLL: entry.version.metrics.heldOutMeanNLL,
                          baselineHeldOutMeanNLL: entry.version.metrics.baselineHeldOutMeanNLL,
                          trainedFrom: entry.trainedFrom?.reference.description)
        }
        let moves = try RegistryService.history(registry, lineage: name).map { move in
            ReportPointerMove(at: move.move.at, from: move.from.map { "\(lineage)/\($0)" }, to: move.to.map { "\(lineage)/\($0)" },
                              reason: move.move.reason.rawValue, actor: move.move.actor.value)
        }
        return (versions, moves)
    }
}

extension ReportService {
    /// Writes the page to `url` atomically, readable by its owner only: a report with `--include-text` holds the
    /// user's examples, and one without still says what the user's model learned and when.
    public static func write(_ html: String, to url: URL) throws {
        try AtomicFile.write(Data(html.utf8), to: url)
    }
}
