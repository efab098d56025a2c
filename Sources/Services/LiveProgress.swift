import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage

/// What is running now, read from the job table: each running job with the newest progress note its step wrote
/// (`TrainingNote`: step N/M, the loss raw and smoothed, tokens per second, time left). `adapt work` draws it as
/// bars or JSON lines while its workers run; `adapt runs --watch` shows it under the runs it refreshes.
///
/// The notes are the job's own events, so on PostgreSQL they are rows of the server written by whichever host
/// runs the step: a supervisor sees the progress of steps running elsewhere, as `events` does.
public struct LiveProgress: Sendable {
    let queue: any JobEngine
    /// The SQLite database whose commits wake a follower; nil on PostgreSQL.
    let sqlite: Database?
    /// On PostgreSQL, what wakes a follower when a transaction writing job events (a progress note, a claim, a
    /// completion) commits; nil for a role that may not list itself as a follower, which looks every
    /// `postgresLookMilliseconds` instead. A step that lasts less than one look would otherwise go unseen.
    let events: PostgresEventFollower?

    public init(database: Database) throws {
        queue = try JobQueue(database: database)
        sqlite = database
        events = nil
    }

    /// The running jobs of the PostgreSQL database `connectionString` names.
    public init(postgres connectionString: String) throws {
        queue = try PostgresJobQueue(connectionString: connectionString)
        sqlite = nil
        events = try? PostgresEventFollower(connectionString: connectionString)
    }

    /// How long a PostgreSQL follower waits at most before it looks again, woken or not (so it notices
    /// cancellation soon, and a role that cannot listen still sees progress).
    static let postgresLookMilliseconds = 250

    /// One running job and how far it is; the step fields are nil for a step that writes no training notes.
    public struct Entry: Sendable, Equatable, Encodable {
        public let jobID: String
        public let runID: String
        public let name: String
        public let kind: String
        public let attempt: Int
        public let step: Int?
        public let totalSteps: Int?
        public let loss: Double?
        public let smoothedLoss: Double?
        public let tokensPerSecond: Double?
        public let etaSeconds: Double?
        /// When the newest note was written (or the job claimed).
        public let at: Int64

        enum CodingKeys: String, CodingKey {
            case name, kind, attempt, step, loss, at
            case jobID = "job_id", runID = "run_id", totalSteps = "total_steps", smoothedLoss = "smoothed_loss"
            case tokensPerSecond = "tokens_per_second", etaSeconds = "eta_seconds"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(jobID, forKey: .jobID)
            try c.encode(runID, forKey: .runID)
            try c.encode(name, forKey: .name)
            try c.encode(kind, forKey: .kind)
            try c.encode(attempt, forKey: .attempt)
            try c.encode(step, forKey: .step)
            try c.encode(totalSteps, forKey: .totalSteps)
            try c.encode(loss, forKey: .loss)
            try c.encode(smoothedLoss, forKey: .smoothedLoss)
            try c.encode(tokensPerSecond, forKey: .tokensPerSecond)
            try c.encode(etaSeconds, forKey: .etaSeconds)
            try c.encode(Timestamp.iso8601(at), forKey: .at)
        }
    }

    /// Every running job (of `run` when given), oldest first.
    public func running(run: RunID? = nil) throws -> [Entry] {
        let jobs = try queue.jobs(matching: .init(run: run, state: .running, limit: 1_000)).sorted { $0.id < $1.id }
        return try jobs.map { job in
            // The newest note of this attempt: an earlier attempt's figures would show progress that was lost.
            let events = try queue.events(run: nil, job: job.id, afterID: 0, limit: Int.max).filter { $0.attempt == job.attempt }
            let claimed = events.last { $0.to == .running && $0.from != .running }?.at ?? job.updatedAt
            var note: TrainingNote.StepNote?
            var at = claimed
            for event in events.reversed() where event.from == .running && event.to == .running {
                if case let .step(found)? = event.message.flatMap(TrainingNote.init(message:)) {
                    note = found
                    at = event.at
                    break
                }
            }
            return Entry(jobID: job.id.description, runID: job.runID.description, name: job.name, kind: job.kind, attempt: job.attempt,
                         step: note?.step, totalSteps: note?.total, loss: note?.loss, smoothedLoss: note?.smoothed,
                         tokensPerSecond: note?.tokensPerSecond, etaSeconds: note?.etaSeconds, at: at)
        }
    }

    /// Calls `show` with the running jobs now and again after every commit that changes them, until cancelled.
    /// On PostgreSQL a look that fails (the server out of reach) is made again after a look interval.
    public func follow(run: RunID? = nil, _ show: ([Entry]) -> Void) async throws {
        var last: [Entry]?
        while !Task.isCancelled {
            let version = try sqlite?.dataVersion()
            guard let entries = try await look({ try running(run: run) }) else { continue }
            if entries != last { show(entries); last = entries }
            try await waitForChange(since: version)
        }
    }

    /// `read`'s answer, reopening a broken PostgreSQL connection first; nil, after a look interval, while the
    /// server is out of reach (any other error is thrown).
    func look<T>(_ read: () throws -> T) async throws -> T? {
        guard let postgres = queue as? PostgresJobQueue else { return try read() }
        do {
            try postgres.connection.reconnectIfBroken()
            return try read()
        } catch where postgres.connection.isOutage(error) {
            try await Task.sleep(for: .milliseconds(Self.postgresLookMilliseconds))
            return nil
        }
    }

    /// Returns after the next commit to the SQLite database (or cancellation); on PostgreSQL after the next commit
    /// that wrote job events, or one look interval.
    func waitForChange(since version: Int64?) async throws {
        guard let sqlite else {
            guard let events else { return try await Task.sleep(for: .milliseconds(Self.postgresLookMilliseconds)) }
            // The wait blocks its thread: it gets one of its own rather than one of the few the tasks share.
            let waited = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                DispatchQueue.global().async {
                    continuation.resume(returning: (try? events.waitForEvents(timeoutMilliseconds: Self.postgresLookMilliseconds)) != nil)
                }
            }
            // A failed wait: the session is gone; a new one listens once the server answers.
            if !waited {
                try await Task.sleep(for: .milliseconds(Self.postgresLookMilliseconds))
                try? events.resume()
            }
            return
        }
        while try sqlite.dataVersion() == version, !Task.isCancelled { try await Task.sleep(for: .milliseconds(50)) }
    }

    /// One line for a terminal `width` columns wide: `train job-3  [#####-----] 20/48  loss 2.310 (2.401)  512 tok/s  ETA 1:05`.
    public static func line(_ entry: Entry, width: Int) -> String {
        let head = "\(entry.name) \(entry.jobID)"
        guard let step = entry.step, let total = entry.totalSteps, total > 0 else { return head + "  running (attempt \(entry.attempt))" }
        var tail = "  \(step)/\(total)"
        if let loss = entry.loss { tail += String(format: "  loss %.3f", loss) }
        if let smoothed = entry.smoothedLoss { tail += String(format: " (%.3f)", smoothed) }
        if let speed = entry.tokensPerSecond { tail += String(format: "  %.0f tok/s", speed) }
        if let eta = entry.etaSeconds, eta.isFinite { tail += "  ETA " + clock(eta) }
        let barWidth = max(10, min(30, width - head.count - tail.count - 4))
        let filled = min(barWidth, Int((Double(step) / Double(total) * Double(barWidth)).rounded(.down)))
        return head + "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]" + tail
    }

    static func clock(_ seconds: Double) -> String {
        let whole = Int(min(max(seconds, 0), 359_999).rounded())
        return whole >= 3_600 ? String(format: "%d:%02d:%02d", whole / 3_600, (whole / 60) % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }
}

extension LiveProgress {
    /// Calls `show` with the newest `limit` runs and what is running, now and after every commit that changes
    /// either; returns once every run shown has finished.
    public func followRuns(limit: Int, _ show: ([RunRecord], [Entry]) -> Void) async throws {
        var last: ([RunRecord], [Entry])?
        while !Task.isCancelled {
            let version = try sqlite?.dataVersion()
            guard let (runs, entries) = try await look({ (try queue.runs(limit: limit), try running()) }) else { continue }
            if last.map({ $0.0 != runs || $0.1 != entries }) ?? true { show(runs, entries); last = (runs, entries) }
            if runs.allSatisfy(\.isFinished) { return }
            try await waitForChange(since: version)
        }
    }
}
