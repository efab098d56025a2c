import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// Fencing of side effects (issue 16): a worker process that stops inside a step until its lease has passed,
/// while another worker takes the step over and finishes the run, changes nothing when it is resumed, and
/// nothing of its attempt was visible while it was stopped.
///
/// The stale worker is held at a named point with `ADAPT_TEST_PAUSE_AT` (it sends itself SIGSTOP there), so the
/// test waits for a process state, never for a timer. Every kind is held where its side effects would be
/// written: after its body's work, before its completion (and train also just before a checkpoint pointer).
@Suite(.serialized, .timeLimit(.minutes(10))) struct StaleWorkerTests {
    static let order = ["prune", "sample", "train", "eval", "promote"]
    /// The stopped worker's lease: how long the takeover waits. The worker taking over holds its own steps
    /// longer, so that a slow machine does not make it lose them too.
    static let staleLease = "1500"
    static let takeoverLease = "5000"

    /// One example state: the tiny model, the logbook lineage with six training examples imported 40 days ago
    /// (so tonight's prune, with the pipeline's 30-day TTL, deletes them), and tonight's run enqueued.
    static func prepared() async throws -> (PipelineFixture, run: String) {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 8, checkpointInterval: 4))
        let db = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let aged = try db.run("""
            UPDATE replay_examples SET created_at = created_at - ?, expires_at = expires_at - ?
            WHERE id IN (SELECT id FROM replay_examples WHERE split = 'train' ORDER BY id LIMIT 6)
            """, Self.fortyDays, Self.fortyDays)
        #expect(aged == 6)
        return (fixture, try await fixture.enqueue())
    }

    static let fortyDays: Int64 = 40 * 86_400_000

    @Test(arguments: ["prune.before-finalize", "sample.before-finalize", "train.before-checkpoint-pointer",
                      "train.before-finalize", "eval.before-finalize", "promote.before-finalize"])
    func aWorkerResumedAfterLosingItsLeaseChangesNothing(point: String) async throws {
        let kind = String(point.prefix(while: { $0 != "." }))
        let (fixture, run) = try await Self.prepared()
        for earlier in Self.order.prefix(while: { $0 != kind }) {
            try fixture.expectSuccess(await Self.worker(earlier, fixture, ["--exit-when-idle"]))
        }
        let before = try Self.sideEffects(fixture)

        let stale = try Executables.start("adapt-\(kind)-worker",
                                          ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", Self.staleLease],
                                          environment: ["ADAPT_TEST_PAUSE_AT": point], outputIn: fixture.directory.url)
        try await Self.waitUntilStopped(stale)
        let paused = try Self.sideEffects(fixture)
        #expect(paused.rows == before.rows, "the stopped attempt's writes are visible before its completion")
        #expect(paused.referencedBlobs == before.referencedBlobs, "a row refers to a blob of the stopped attempt")

        // Another worker takes the step over once the lease has passed, and finishes the run.
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle", "--lease-ms", Self.takeoverLease]))
        let settled = try await Self.everything(fixture, run: run)

        stale.send(SIGCONT)
        #expect(try await blocking { stale.wait() } == 0, "\(stale.stderr)")
        #expect(stale.stderr.contains("0 succeeded"), "\(stale.stderr)")
        #expect(stale.stderr.contains("1 lost their lease"), "\(stale.stderr)")
        let after = try await Self.everything(fixture, run: run)
        #expect(after.show == settled.show, "adapt show changed")
        #expect(after.jobs.count == 5 && after.jobs == settled.jobs, "adapt show of a job changed")
        #expect(after.stats == settled.stats, "adapt data stats changed")
        #expect(after.registry == settled.registry, "adapt registry list changed")
        #expect(after.referencedBlobs == settled.referencedBlobs, "the referenced blobs changed")
        #expect(after.tables == settled.tables, "the database changed")

        // The step was taken over (its second attempt completed) and the run ended as an undisturbed one does.
        let queue = try fixture.queue()
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try queue.jobs(matching: .init(run: runID))
        #expect(jobs.count == 5)
        #expect(jobs.allSatisfy { $0.state == .succeeded })
        #expect((jobs.first { $0.kind == kind }?.attempt ?? 0) >= 2)
        let (calm, calmRun) = try await Self.prepared()
        try calm.expectSuccess(await calm.adapt(["work", "--exit-when-idle"]))
        let undisturbed = try await Self.everything(calm, run: calmRun)
        #expect(Self.comparable(after) == Self.comparable(undisturbed), "the run differs from an undisturbed one")
        #expect(after.stats.first?["examples"] == .int(84), "\(after.stats)")
    }

    // MARK: Processes

    static func worker(_ kind: String, _ fixture: PipelineFixture, _ arguments: [String]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath] + arguments)
    }

    /// Polls /proc until the process is stopped (state T), failing if it exits first or takes a minute.
    static func waitUntilStopped(_ process: RunningProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let stat = (try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8)) ?? ""
            if let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].split(separator: " ").first == "T" { return }
            guard process.isRunning else { Issue.record("the worker exited before its pause point: \(process.stderr)"); throw Stopped() }
            guard ContinuousClock.now < deadline else { Issue.record("the worker never reached its pause point"); throw Stopped() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    struct Stopped: Error {}

    // MARK: What the state shows

    struct SideEffects: Equatable {
        /// Every row of every table outside the job engine's, as text, table by table (a table another step
        /// migrates into being is the same as an absent one while it is empty; schema versions are left out).
        var rows: [String: [String]]
        /// The blobs that some row names (a 64-hex digest of a file in blobs/, anywhere in any column) besides
        /// the job events and the train step's checkpoint pointer (`jobs.checkpoint_pointer`), which it writes
        /// while its lease is held.
        var referencedBlobs: Set<String>

        init(_ tables: [String: [String]], blobs: Set<String>, checkpoints: Set<String> = []) {
            rows = tables.filter { !$0.key.hasPrefix("job") && $0.key != "adapt_schema" && !$0.value.isEmpty }
            referencedBlobs = StaleWorkerTests.referenced(in: tables.filter { $0.key != "job_events" })
                .intersection(blobs).subtracting(checkpoints)
        }
    }

    struct Everything {
        var show: JSONValue
        /// `adapt show job-N --json` of each of the run's jobs (input, output, events).
        var jobs: [JSONValue]
        var stats: [JSONValue]
        var registry: [JSONValue]
        var effects: SideEffects
        var tables: [String: [String]]
        /// Every blob any row names, the job events' checkpoint pointers included.
        var referencedBlobs: Set<String>
    }

    static func sideEffects(_ fixture: PipelineFixture) throws -> SideEffects {
        let db = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let pointers = try db.query("SELECT checkpoint_pointer FROM jobs WHERE checkpoint_pointer IS NOT NULL")
            .compactMap { $0.string("checkpoint_pointer") }
        return SideEffects(try tables(fixture), blobs: try storedBlobs(fixture),
                           checkpoints: referenced(in: ["pointers": pointers]))
    }

    static func everything(_ fixture: PipelineFixture, run: String) async throws -> Everything {
        func json(_ arguments: [String]) async throws -> JSONValue {
            let result = try await fixture.adapt(arguments + ["--json"])
            try fixture.expectSuccess(result)
            return try JSON.decode(JSONValue.self, from: result.stdout, context: arguments.joined(separator: " "))
        }
        let tables = try Self.tables(fixture)
        let blobs = try storedBlobs(fixture)
        let show = try await json(["show", run])
        var jobs: [JSONValue] = []
        for id in (show["jobs"]?.arrayValue ?? []).compactMap({ $0["id"]?.stringValue }) { jobs.append(try await json(["show", id])) }
        return Everything(
            show: show, jobs: jobs, stats: try await json(["data", "stats"]).arrayValue ?? [],
            registry: try await json(["registry", "list"]).arrayValue ?? [],
            effects: SideEffects(tables, blobs: blobs), tables: tables, referencedBlobs: referenced(in: tables).intersection(blobs))
    }

    static func tables(_ fixture: PipelineFixture) throws -> [String: [String]] {
        let db = try Database(path: fixture.directory.state.database.path, durability: .normal)
        var out: [String: [String]] = [:]
        for table in try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap({ $0.string("name") }) {
            let columns = try db.query("SELECT name FROM pragma_table_info(?)", table).compactMap { $0.string("name") }
            out[table] = try db.query("SELECT * FROM \"\(table)\"").map { row in
                columns.map { "\(row[$0])" }.joined(separator: "|")
            }.sorted()
        }
        return out
    }

    static func storedBlobs(_ fixture: PipelineFixture) throws -> Set<String> {
        let root = fixture.directory.state.root.appendingPathComponent("blobs")
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return Set(paths.compactMap { $0.split(separator: "/").last.map(String.init) }.filter { $0.count == 64 })
    }

    /// Every 64-hex-digit string in any row of `tables`.
    static func referenced(in tables: [String: [String]]) -> Set<String> {
        var found: Set<String> = []
        for rows in tables.values {
            for row in rows { for match in row.matches(of: /[0-9a-f]{64}/) { found.insert(String(row[match.range])) } }
        }
        return found
    }

    /// What an undisturbed run of the same night must match: every step's compared output digest except
    /// prune's (its clock reading and buffer snapshot differ from state to state) and prune's counts; the
    /// buffer's counts and budget; the registry's versions without their dates.
    static func comparable(_ state: Everything) -> JSONValue {
        var steps: [String: JSONValue] = [:]
        for job in state.show["jobs"]?.arrayValue ?? [] {
            guard let name = job["name"]?.stringValue, let output = job["output"] else { continue }
            steps[name] = name == "prune"
                ? .object(["deleted": output["deleted"] ?? .null, "remaining_train": output["remaining_train"] ?? .null,
                           "remaining_held_out": output["remaining_held_out"] ?? .null])
                : output["digests"]?["output"] ?? .null
        }
        func without(_ keys: Set<String>, _ value: JSONValue) -> JSONValue {
            .object((value.objectValue ?? [:]).filter { !keys.contains($0.key) })
        }
        return .object([
            "steps": .object(steps),
            "stats": .array(state.stats.map { without(["oldest_created_at", "newest_created_at", "next_expiry"], $0) }),
            "registry": .array(state.registry.map { without(["created_at"], $0) }),
        ])
    }
}
