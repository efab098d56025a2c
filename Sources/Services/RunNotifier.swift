import AdaptCore
import Foundation
import JobQueue
import Report
import Steps
import Storage

/// Tells someone when a nightly run ends: the run's pipeline names a `notify` command, which `adapt work` runs with
/// the run's outcome as JSON on stdin (`RunOutcome`), once per run that finishes while it works.
///
/// A run counts as ended when none of its jobs has work ahead (`RunRecord.isFinished`) and its last change came
/// after this `adapt work` started, so a run that ended earlier is not announced again by a later one. On
/// PostgreSQL the supervisors of every host see the run end; the one that claims it on the server announces it
/// (`PostgresJobQueue.claimAnnouncement`), and if it dies before its command has run, another takes it over: at
/// least once there, at most once on SQLite, where one supervisor works a state.
public final class RunNotifier: @unchecked Sendable {  // `announced` is only touched with `lock` held
    let queue: any JobEngine
    let since: Int64
    /// The database whose commits wake `follow`; nil on PostgreSQL, where it looks every `postgresLookMilliseconds`.
    private let sqlite: Database?
    private let postgres: PostgresJobQueue?
    private let lock = NSLock()
    private var announced: Set<RunID> = []

    public init(database: Database, since: Int64) throws {
        queue = try JobQueue(database: database)
        sqlite = database
        postgres = nil
        self.since = since
    }

    /// The runs of the PostgreSQL database `connectionString` names.
    public init(postgres connectionString: String, since: Int64) throws {
        let postgres = try PostgresJobQueue(connectionString: connectionString)
        queue = postgres
        sqlite = nil
        self.postgres = postgres
        self.since = since
    }

    /// A run's end is news for a person or a chat, not for a program racing it: a look a second costs the server
    /// one small read, where waking on every event would make every worker's commit notify (`eventNotifications`).
    static let postgresLookMilliseconds = 1_000

    /// Calls `handle` with each run that ended since the last call (each once, and on PostgreSQL once across
    /// hosts), oldest first.
    public func announceEnded(_ handle: (RunOutcome) async -> Void) async throws {
        for (run, outcome) in try ended() {
            await handle(outcome)
            try postgres?.finishAnnouncement(of: run)
        }
    }

    /// The runs this notifier is to announce now, with their outcomes; on PostgreSQL each is claimed until
    /// `finishAnnouncement`.
    func ended() throws -> [(RunID, RunOutcome)] {
        // After an outage (a server restart, a cut link) the connection is reopened here: nothing else uses it.
        try postgres?.connection.reconnectIfBroken()
        // Announcements a dead supervisor left unmade are taken over, even of runs that ended before this one started.
        let unfinished = Set(try postgres?.unfinishedAnnouncements() ?? [])
        // The newest runs only: a run that ends while `adapt work` runs is among them, and this is read at every commit.
        let finished = try queue.runs(limit: 50).filter {
            $0.kind == NightlyRun.kind && $0.isFinished && ($0.updatedAt >= since || unfinished.contains($0.id))
        }
        var ours: [RunRecord] = []
        for run in lock.withLock({ finished.filter { !announced.contains($0.id) } }) {
            // A claim that fails (the server gone) leaves the run to the next look; one another host is making now
            // too, in case that host dies before it is done.
            switch try postgres?.claimAnnouncement(of: run.id) ?? .ours {
            case .inHand: continue
            case .delivered: lock.withLock { _ = announced.insert(run.id) }
            case .ours:
                lock.withLock { _ = announced.insert(run.id) }
                ours.append(run)
            }
        }
        return try ours.sorted { $0.id < $1.id }.map { ($0.id, try RunOutcome.of($0, queue: queue)) }
    }

    /// Calls `handle` with every run that ends, until cancelled; wakes on each commit (on PostgreSQL, every
    /// `postgresLookMilliseconds`, and a look that fails, the server out of reach, is made again at the next).
    public func follow(_ handle: (RunOutcome) async -> Void) async throws {
        while !Task.isCancelled {
            let version = try sqlite?.dataVersion()
            guard let sqlite else {
                do {
                    try await announceEnded(handle)
                } catch where postgres?.connection.isOutage(error) == true {}
                try await Task.sleep(for: .milliseconds(Self.postgresLookMilliseconds))
                continue
            }
            try await announceEnded(handle)
            while try sqlite.dataVersion() == version, !Task.isCancelled { try await Task.sleep(for: .milliseconds(50)) }
        }
    }

    /// What running a notify command came to.
    public enum Delivery: Sendable, Equatable {
        /// The pipeline names no command.
        case none
        case delivered(command: String)
        case failed(command: String, reason: String)
    }

    /// Runs the outcome's notify command with the outcome on stdin; it gets `timeout` seconds, then its process
    /// group gets SIGTERM and, `grace` seconds later, SIGKILL. Its output goes to this process's stderr (the
    /// journal, under the systemd timer).
    public static func deliver(_ outcome: RunOutcome, timeout: Double = 30, grace: Double = 2) -> Delivery {
        guard let command = outcome.notify, let program = command.first else { return .none }
        let input = Data((JSON.canonicalString(outcome) + "\n").utf8)
        switch NotifyCommand(command: command).run(input: input, timeout: timeout, grace: grace) {
        case .notStarted:
            return .failed(command: program, reason: "could not start it")
        case .stopped:
            return .failed(command: program, reason: "still running after \(Int(timeout)) s; stopped")
        case let .signalled(signal):
            return .failed(command: program, reason: "killed by signal \(signal)")
        case .exited(0):
            return .delivered(command: program)
        case let .exited(status):
            // env exits 127 when it cannot find or run the program.
            return .failed(command: program, reason: status == 127 ? "not found on PATH" : "exit status \(status)")
        }
    }
}

/// How a run ended, as a notify command reads it on stdin and the journal shows it.
public struct RunOutcome: Sendable, Equatable, Encodable {
    public let runID: String
    public let lineage: String?
    public let night: String?
    /// `succeeded`, `failed` or `cancelled`, as `adapt runs` says.
    public let state: String
    /// `promoted`, `refused` (by the gate), `failed` or `cancelled`.
    public let result: String
    public let gate: Gate?
    /// The version the candidate was registered as (`lineage/vN`).
    public let version: String?
    /// The step that was discarded or cancelled first, with its error.
    public let failedStep: FailedStep?
    public let finishedAt: Int64
    /// The command that shows the run as a page.
    public let report: String
    /// The pipeline's notify command (not part of the JSON).
    public let notify: [String]?

    public struct Gate: Sendable, Equatable, Encodable {
        public let outcome: String?
        public let comparedWith: String?
        public let pValue: Double?
        public let candidateMeanNLL: Double?
        public let incumbentMeanNLL: Double?
        public let heldOutExamples: Int?

        enum CodingKeys: String, CodingKey {
            case outcome
            case comparedWith = "compared_with", pValue = "p_value", candidateMeanNLL = "candidate_mean_nll"
            case incumbentMeanNLL = "incumbent_mean_nll", heldOutExamples = "held_out_examples"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(outcome, forKey: .outcome)
            try c.encode(comparedWith, forKey: .comparedWith)
            try c.encode(pValue, forKey: .pValue)
            try c.encode(candidateMeanNLL, forKey: .candidateMeanNLL)
            try c.encode(incumbentMeanNLL, forKey: .incumbentMeanNLL)
            try c.encode(heldOutExamples, forKey: .heldOutExamples)
        }
    }

    public struct FailedStep: Sendable, Equatable, Encodable {
        public let job: String
        public let name: String
        public let state: String
        public let error: String?
    }

    enum CodingKeys: String, CodingKey {
        case lineage, night, state, result, gate, version, report
        case runID = "run_id", failedStep = "failed_step", finishedAt = "finished_at"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(runID, forKey: .runID)
        try c.encode(lineage, forKey: .lineage)
        try c.encode(night, forKey: .night)
        try c.encode(state, forKey: .state)
        try c.encode(result, forKey: .result)
        try c.encode(gate, forKey: .gate)
        try c.encode(version, forKey: .version)
        try c.encode(failedStep, forKey: .failedStep)
        try c.encode(Timestamp.iso8601(finishedAt), forKey: .finishedAt)
        try c.encode(report, forKey: .report)
    }

    /// One line for a person (and the journal): `run-3 logbook/2026-11-30: refused by the gate (not_enough_evidence, p 0.31)`.
    public var sentence: String {
        let name = "\(runID)" + (lineage.map { " \($0)/\(night ?? "")" } ?? "")
        let gateWords = gate.map { gate in
            "(\(gate.outcome ?? "no verdict")" + (gate.pValue.map { String(format: ", p %.3g", $0) } ?? "") + ")"
        }
        switch result {
        case "promoted": return "\(name): promoted \(version ?? "") \(gateWords ?? "")".replacingOccurrences(of: "  ", with: " ")
        case "refused": return "\(name): refused by the gate \(gateWords ?? "")"
        case "cancelled": return "\(name): cancelled"
        default:
            return "\(name): failed" + (failedStep.map { " at \($0.name) (\($0.state))" } ?? "")
        }
    }

    static func of(_ run: RunRecord, queue: any JobEngine) throws -> RunOutcome {
        let lineage = run.manifest["lineage"]?.stringValue
        let night = try ReportService.night(run, queue: queue, lineage: lineage ?? "")
        let jobs = try queue.jobs(matching: .init(run: run.id, limit: Int.max)).sorted { $0.id < $1.id }
        let failed = jobs.first { $0.state == .discarded } ?? jobs.first { $0.state == .cancelled }
        let notify = run.manifest["definition"]?["notify"]?.arrayValue?.compactMap(\.stringValue)
        return RunOutcome(
            runID: run.id.description, lineage: lineage, night: run.manifest["night"]?.stringValue, state: run.state,
            result: night.result.rawValue,
            gate: night.outcome == nil ? nil : Gate(outcome: night.outcome, comparedWith: night.comparedWith, pValue: night.pValue,
                                                   candidateMeanNLL: night.candidateMeanNLL, incumbentMeanNLL: night.incumbentMeanNLL,
                                                   heldOutExamples: night.heldOutExamples),
            version: night.version,
            failedStep: failed.map { FailedStep(job: $0.id.description, name: $0.name, state: $0.state.rawValue, error: $0.error) },
            finishedAt: run.updatedAt, report: "adapt report \(run.id)", notify: notify)
    }
}
