import AdaptCore
import CommandLineKit
import Foundation
import Services

/// The read-only job commands: `runs`, `jobs`, `show`, `events`.
extension JobCommands {
    static let runs = Command(
        "runs", summary: "list runs, newest first",
        discussion: """
            With --watch the listing is shown again each time it changes, with a line per running step (step N/M,
            loss raw and smoothed, tokens per second, time left), until every run listed has finished: redrawn in
            place on a terminal, appended otherwise, and as JSON lines ({"runs": [...], "running": [...]}) with --json.
            """,
        options: [Listing.runLimit, Listing.watch, .json]
    ) { invocation in
        let limit = try invocation.arguments[Listing.runLimit]
        let json = invocation.arguments[.json]
        if invocation.arguments[Listing.watch] {
            let live = try GlobalOptions.postgresDatabase(invocation).map(LiveProgress.init(postgres:))
                ?? LiveProgress(database: try GlobalOptions.readOnlyDatabase(invocation))
            let inPlace = !json && Console.isTerminal
            try await live.followRuns(limit: limit) { runs, running in
                if json {
                    Console.print(JSON.canonicalString(JSONValue.object([
                        "runs": (try? JSON.decode(JSONValue.self, from: JSON.canonical(runs), context: "runs")) ?? .array([]),
                        "running": (try? JSON.decode(JSONValue.self, from: JSON.canonical(running), context: "running")) ?? .array([]),
                    ])))
                    return
                }
                let lines = running.map { TerminalText.escaped(LiveProgress.line($0, width: 100)) }
                // Home and clear: the listing replaces the one before instead of scrolling.
                Console.write((inPlace ? "\u{1B}[H\u{1B}[2J" : "") + runTable(runs) + "\n" + lines.map { $0 + "\n" }.joined() + (inPlace ? "" : "\n"))
            }
            return
        }
        let runs = try history(invocation).runs(limit: limit)
        if json { Console.print(JSON.pretty(runs)); return }
        Console.print(runTable(runs))
    }

    static func runTable(_ runs: [RunRecord]) -> String {
        var table = Table("ID", "KIND", "NAME", "STATE", "DONE", "ATTEMPT", "CREATED", "UPDATED")
        for run in runs {
            let done = (run.counts[.succeeded] ?? 0)
            table.append([run.id.description, run.kind, run.name, run.state, "\(done)/\(run.total)", "\(run.attempt)",
                          Timestamp.iso8601(run.createdAt), Timestamp.iso8601(run.updatedAt)])
        }
        return runs.isEmpty ? "no runs; 'adapt enqueue noop --count 3' makes one" : table.render()
    }

    static let jobs = Command(
        "jobs", summary: "list jobs (the newest N matching, oldest first)",
        options: [Listing.run, Listing.status, Listing.oldStatus, Listing.kind, Listing.jobLimit, .json]
    ) { invocation in
        let a = invocation.arguments
        if a.given(Listing.status) && a.given(Listing.oldStatus) {
            throw UsageError("give --status only (--state is its old spelling)")
        }
        if a.given(Listing.oldStatus) {
            Console.error("adapt: note: 'adapt jobs --state S' is now 'adapt jobs --status S'; --state alone names the state "
                          + "directory, before the command (adapt --state DIR jobs)")
        }
        let state = try a[Listing.status] ?? a[Listing.oldStatus]
        let run = try a[Listing.run]
        let kind = try a[Listing.kind]
        let limit = try a[Listing.jobLimit]
        let jobs = try history(invocation).jobs(run: run, state: state, kind: kind, limit: limit)
        if a[.json] { Console.print(JSON.pretty(jobs)); return }
        Console.print(jobs.isEmpty ? "no jobs match" : jobTable(jobs).render())
    }

    /// The options of the listings.
    enum Listing {
        static let runLimit = Option("limit", default: 50, in: 1...1_000_000, help: "how many")
        static let jobLimit = Option("limit", default: 100, in: 1...10_000_000, help: "how many")
        static let eventLimit = Option("limit", default: 10_000, in: 1...100_000_000, help: "at most N events")
        static let run = runOption(help: "only this run's jobs")
        static let eventRun = runOption(help: "only this run's events")
        static let job = Option<JobID?>("job", value: "ID", default: nil, help: "only this job's events") { text in
            guard let id = JobID.parse(text) else { throw UsageError("expects a job id like job-3, got '\(text.prefix(40))'") }
            return id
        }
        static let status = jobState("status", help: "only jobs in this state (\(JobState.allCases.map(\.rawValue).joined(separator: ", ")))")
        /// The filter's old name, which it shared with the global state directory option: still read, with a note.
        static let oldStatus = jobState("state", help: "old spelling of --status")

        static func jobState(_ name: String, help: String) -> Option<JobState?> {
            Option<JobState?>(name, value: "S", default: nil, help: help) { text in
                guard let state = JobState(rawValue: text) else {
                    throw UsageError("must be one of \(JobState.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
                }
                return state
            }
        }
        static let kind = Option<String?>("kind", value: "K", help: "only jobs of this kind")
        static let watch = Flag("watch", help: "show the listing again at every change, with the running steps' progress, until every run listed has finished")
        static let follow = Flag("follow", help: "print the last --limit events, then each new one (with --run: until the run finishes); JSON lines with --json")

        static func runOption(help: String) -> Option<RunID?> {
            Option<RunID?>("run", value: "ID", default: nil, help: help) { text in
                guard let id = RunID.parse(text) else { throw UsageError("expects a run id like run-3, got '\(text.prefix(40))'") }
                return id
            }
        }
    }

    static func jobTable(_ jobs: [JobRecord]) -> Table {
        var table = Table("ID", "RUN", "NAME", "KIND", "STATE", "ATTEMPT", "UPDATED", "ERROR")
        for job in jobs {
            table.append([job.id.description, job.runID.description, job.name, job.kind, job.state.rawValue,
                          "\(job.attempt)/\(job.maxAttempts)", Timestamp.iso8601(job.updatedAt), oneLine(job.error ?? "", 60)])
        }
        return table
    }

    static let show = Command(
        "show", summary: "show one run (with its manifest and jobs) or one job (with input, output and events)",
        options: [.json], positionals: [PositionalSpec("ID", help: "run-N or job-N")]
    ) { invocation in
        let text = try invocation.arguments.required("ID")
        guard let identifier = Identifier.parse(text) else {
            throw UsageError("ID expects run-N or job-N, got '\(text.prefix(40))'")
        }
        let history = try history(invocation)
        let json = invocation.arguments[.json]
        let shown: JobHistory.Shown
        do { shown = try history.show(identifier, text: text) } catch let error as JobQueueError {
            guard case .ambiguousIdentifier = error else { throw error }
            throw UsageError(error.description)
        }
        switch shown {
        case let .run(detail): try showRun(detail, json: json)
        case let .job(detail): try showJob(detail, json: json)
        }
    }

    static func showRun(_ detail: JobHistory.RunDetail, json: Bool) throws {
        let (run, jobs, erased) = (detail.run, detail.jobs, detail.erased)
        if json {
            var fields = try object(run)
            fields["manifest"] = run.manifest
            fields["jobs"] = .array(try jobs.map { .object(try object($0)) })
            fields["erased_inputs"] = .array(try erased.map { .object(try object($0)) })
            Console.print(JSON.pretty(JSONValue.object(fields)))
            return
        }
        var lines = ["run \(run.id): \(run.name) (\(run.kind))", "state: \(run.state)",
                     "created: \(Timestamp.iso8601(run.createdAt))", "updated: \(Timestamp.iso8601(run.updatedAt))"]
        if let key = run.uniqueKey { lines.append("unique key: \(key)") }
        if let at = run.cancelledAt { lines.append("cancelled: \(Timestamp.iso8601(at))") }
        lines.append("manifest: \(run.manifest)")
        lines += erased.map { "\($0.step): \($0.field): \($0.message)" }
        Console.print(lines.map { TerminalText.escaped($0) }.joined(separator: "\n") + "\n\n" + jobTable(jobs).render())
    }

    static func showJob(_ detail: JobHistory.JobDetail, json: Bool) throws {
        let (job, parents, events, erased) = (detail.job, detail.parents, detail.events, detail.erased)
        if json {
            var fields = try object(job)
            fields["erased_inputs"] = .array(try erased.map { .object(try object($0)) })
            fields["input"] = job.input
            fields["output"] = job.output ?? .null
            fields["depends_on"] = .array(parents.map { .string($0.description) })
            fields["events"] = .array(try events.map { .object(try object($0)) })
            Console.print(JSON.pretty(JSONValue.object(fields)))
            return
        }
        var lines = ["job \(job.id): \(job.name) (\(job.kind)) in \(job.runID)", "state: \(job.state)",
                     "attempt: \(job.attempt) of \(job.maxAttempts)", "priority: \(job.priority)",
                     "run at: \(Timestamp.iso8601(job.runAt))",
                     "depends on: \(parents.isEmpty ? "nothing" : parents.map(\.description).joined(separator: ", "))"]
        if let owner = job.leaseOwner, let until = job.leaseExpiresAt {
            lines.append("lease: \(owner) until \(Timestamp.iso8601(until))")
        }
        lines.append("input: \(job.input)")
        if let output = job.output { lines.append("output: \(output)") }
        if let error = job.error { lines.append("error: \(error)") }
        lines += erased.map { "\($0.field): \($0.message)" }
        Console.print(lines.map { TerminalText.escaped($0) }.joined(separator: "\n") + "\n\n" + eventTable(events).render())
    }

    static let events = Command(
        "events", summary: "print the history of state changes (and progress notes)",
        options: [Listing.eventRun, Listing.job, Listing.eventLimit, Listing.follow, .json]
    ) { invocation in
        let a = invocation.arguments
        let run = try a[Listing.eventRun]
        let job = try a[Listing.job]
        let limit = try a[Listing.eventLimit]
        let history = try history(invocation)
        try history.requireExisting(run: run, job: job)
        let json = a[.json]
        guard a[Listing.follow] else {
            let events = try history.events(run: run, job: job, limit: limit)
            Console.print(json ? JSON.pretty(events) : events.isEmpty ? "no events" : eventTable(events).render())
            return
        }
        var header = !json
        try await history.follow(run: run, job: job, limit: limit) { events in
            for event in events {
                if json {
                    Console.print(JSON.canonicalString(event))
                } else {
                    let table = eventTable([event]).render().split(separator: "\n")
                    if header { Console.print(String(table[0])); header = false }
                    Console.print(String(table[1]))
                }
            }
        }
    }

    static func eventTable(_ events: [EventRecord]) -> Table {
        var table = Table("EVENT", "AT", "JOB", "RUN", "ATTEMPT", "CHANGE", "MESSAGE")
        for e in events {
            let change = e.from == e.to ? "(progress)" : "\(e.from?.rawValue ?? "new") → \(e.to.rawValue)"
            table.append(["\(e.id)", Timestamp.iso8601(e.at), e.jobID.description, e.runID.description, "\(e.attempt)",
                          change, oneLine(e.message ?? "", 80)])
        }
        return table
    }

    // MARK: Helpers

    /// A record's JSON fields, to extend with what `show` adds.
    static func object<T: Encodable>(_ value: T) throws -> [String: JSONValue] {
        try JSON.decode(JSONValue.self, from: JSON.canonical(value), context: "record").objectValue ?? [:]
    }

    static func oneLine(_ text: String, _ width: Int) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return flat.count > width ? String(flat.prefix(width - 1)) + "…" : flat
    }
}
