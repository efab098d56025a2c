import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// The nightly pipeline on PostgreSQL through the built executables: `adapt enqueue nightly` and `adapt work`
/// with `--database`, hosts standing for machines (each its own state directory holding only its copy of the
/// model) that share nothing but the database. A night there gives what the same night gives on SQLite.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PostgresNightlyTests {
    /// Long enough that a train worker can be killed between two checkpoints; attempts enough for the chaos test's
    /// kills, pause and server restart.
    static let pipeline = PipelineFixture.pipeline(steps: 40, checkpointInterval: 4, maxAttempts: 12)

    /// The undisturbed night on SQLite: its adapter digest and gate report, and the state its data came from.
    static func nightOnSQLite() async throws -> (fixture: PipelineFixture, adapter: JSONValue, gate: JSONValue) {
        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let outputs = try fixture.outputs(run)
        return (fixture, try #require(outputs["train"]?["adapter_digest"]), try #require(outputs["eval"]?["gate"]))
    }

    /// A database holding the logbook lineage's buffer (copied from a fresh SQLite state by `adapt migrate`), and
    /// `count` host directories with the tiny model in their models/.
    static func sharedDatabase(hosts count: Int, in directory: TemporaryDirectory,
                               on cluster: PostgresCluster? = nil) async throws -> (url: String, hosts: [String]) {
        let source = try await PipelineFixture.make(pipeline: pipeline)
        let url = try (cluster ?? PostgresCluster.shared()).makeDatabase()
        try source.expectSuccess(await blocking { try Executables.run("adapt", ["migrate", "--from", source.statePath, "--to", url]) })
        let model = source.directory.state.models.appendingPathComponent("tiny.gguf")
        let hosts = try (0..<count).map { index in
            let host = StateDirectory(root: directory.url.appendingPathComponent("host-\(index)"))
            try host.create()
            try PrivateFiles.createDirectory(host.models)
            try FileManager.default.copyItem(at: model, to: host.models.appendingPathComponent("tiny.gguf"))
            return host.root.path
        }
        return (url, hosts)
    }

    static func enqueue(on url: String, host: String, pipeline path: String, night: String) async throws -> RunID {
        let result = try await blocking {
            try Executables.run("adapt", ["--state", host, "--database", url, "enqueue", "nightly", "--lineage", "logbook",
                                          "--pipeline", path, "--model", "tiny.gguf", "--night", night, "--json"])
        }
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue output")
        return try #require(json["run_id"]?.stringValue.flatMap(RunID.parse))
    }

    static func outputs(_ queue: PostgresJobQueue, _ run: RunID) throws -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for job in try queue.jobs(matching: .init(run: run)) { if let output = job.output { out[job.name] = output } }
        return out
    }

    /// Every step succeeded exactly once (one `succeeded` event each).
    static func expectEachStepSucceededOnce(_ queue: PostgresJobQueue, _ run: RunID) throws {
        let jobs = try queue.jobs(matching: .init(run: run))
        #expect(jobs.count == 5 && jobs.allSatisfy { $0.state == .succeeded }, "\(jobs.map { "\($0.name): \($0.state)" })")
        for job in jobs {
            let completions = try queue.events(job: job.id).filter { $0.to == .succeeded }.count
            #expect(completions == 1, "\(job.name) completed \(completions) times")
        }
    }

    static func waitUntil(_ what: String, timeout: TimeInterval = 300, _ condition: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while (try? condition()) != true {
            guard Date() < deadline else { Issue.record("timed out waiting until \(what)"); return }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test func aNightOnTwoHostsSharingOnlyTheDatabaseEndsAsOnSQLite() async throws {
        let expected = try await Self.nightOnSQLite()
        let directory = TemporaryDirectory("adapt-pg-night")
        let (url, hosts) = try await Self.sharedDatabase(hosts: 2, in: directory)
        let run = try await Self.enqueue(on: url, host: hosts[0], pipeline: expected.fixture.pipelinePath, night: expected.fixture.night)
        // Host 0 prunes, trains and promotes; host 1 samples and evaluates: every step reads what a step on the
        // other host wrote (snapshots, the adapter) from the database.
        let first = try Executables.start("adapt", ["--state", hosts[0], "--database", url, "work", "--workers", "prune,train,promote"],
                                          outputIn: directory.url)
        let second = try Executables.start("adapt", ["--state", hosts[1], "--database", url, "work", "--workers", "sample,eval"],
                                           outputIn: directory.url)
        let queue = try PostgresJobQueue(connectionString: url)
        try await Self.waitUntil("the run ended") { try queue.run(run).isFinished }
        for host in [first, second] {
            host.send(SIGTERM)
            #expect(try await blocking { host.wait() } == 0, "\(host.stderr)")
        }
        try Self.expectEachStepSucceededOnce(queue, run)
        let outputs = try Self.outputs(queue, run)
        #expect(outputs["train"]?["adapter_digest"] == expected.adapter)
        #expect(outputs["eval"]?["gate"] == expected.gate)
        // Each step was claimed by a worker of the host that runs its kind (the claim event names the owner, whose
        // tag names its supervisor's pid).
        let supervisors = ["prune": first.pid, "train": first.pid, "promote": first.pid, "sample": second.pid, "eval": second.pid]
        for job in try queue.jobs(matching: .init(run: run)) {
            let claims = try queue.events(job: job.id).compactMap(\.message).filter { $0.hasPrefix("claimed by ") }
            let tag = "/work-\(supervisors[job.kind] ?? 0)."
            #expect(!claims.isEmpty && claims.allSatisfy { $0.contains(tag) }, "\(job.kind): \(claims)")
        }

        // The adapter, snapshots and checkpoints are blobs in the database, and the promoted version's row and
        // pointer are there too; no host directory holds a blob.
        let adapter = try #require(outputs["train"]?["adapter_blob"]?.stringValue)
        let stored = try queue.connection.query("SELECT digest FROM blobs").compactMap { $0.string("digest") }
        #expect(stored.contains(adapter))
        for field in ["train_snapshot", "held_out_snapshot"] {
            #expect(stored.contains(try #require(outputs["sample"]?[field]?.stringValue)), "\(field)")
        }
        let promoted = outputs["promote"]?["promoted"] == .bool(true)
        let active = try queue.connection.queryOne("""
            SELECT v.adapter_digest FROM registry_active a JOIN registry_versions v ON v.id = a.version_id WHERE a.lineage = 'logbook'
            """)
        #expect(promoted == (active?.string("adapter_digest") == adapter), "promoted \(promoted), active \(String(describing: active))")
        for host in hosts {
            let blobs = (try? FileManager.default.contentsOfDirectory(atPath: host + "/blobs")) ?? []
            #expect(blobs.isEmpty, "\(host) holds blobs: \(blobs)")
        }
    }

    @Test func aTrainWorkerKilledMidRunResumesFromItsCheckpointBlobAndEndsBitIdentical() async throws {
        let expected = try await Self.nightOnSQLite()
        let directory = TemporaryDirectory("adapt-pg-resume")
        let (url, hosts) = try await Self.sharedDatabase(hosts: 1, in: directory)
        let run = try await Self.enqueue(on: url, host: hosts[0], pipeline: expected.fixture.pipelinePath, night: expected.fixture.night)
        let work = try Executables.start("adapt", ["--state", hosts[0], "--database", url, "work", "--exit-when-idle"],
                                         outputIn: directory.url)
        let queue = try PostgresJobQueue(connectionString: url)
        // Killed once its first checkpoint is in the database and before it finishes.
        var killed: Int32?
        try await Self.waitUntil("the train step has a checkpoint") {
            guard let train = try queue.jobs(matching: .init(run: run, kind: "train")).first,
                  train.state == .running, try queue.checkpointPointer(job: train.id) != nil,
                  let pid = train.leaseOwner?.split(separator: "/").last.flatMap({ Int32($0) }) else { return false }
            kill(pid, SIGKILL)
            killed = pid
            return true
        }
        #expect(killed != nil)
        #expect(try await blocking { work.wait() } == 0, "\(work.stderr)")
        #expect(work.stderr.contains("restarting"), "\(work.stderr)")

        try Self.expectEachStepSucceededOnce(queue, run)
        let train = try #require(try queue.jobs(matching: .init(run: run, kind: "train")).first)
        let events = try queue.events(job: train.id)
        #expect(train.attempt == 2)
        #expect(events.contains { $0.message?.hasPrefix("resumed from checkpoint") == true }, "\(events.compactMap(\.message))")
        // The pointer names blobs of the database, and the result is the uninterrupted SQLite night's, bit for bit.
        let pointer = try #require(try queue.checkpointPointer(job: train.id)?.arrayValue)
        for entry in pointer {
            let digest = try #require(entry["digest"]?.stringValue)
            #expect(try queue.connection.queryOne("SELECT 1 FROM blobs WHERE digest = ?", digest) != nil)
        }
        let outputs = try Self.outputs(queue, run)
        #expect(outputs["train"]?["adapter_digest"] == expected.adapter)
        #expect(outputs["train"]?["losses"] == (try expected.fixture.outputs(try #require(
            try expected.fixture.queue().runs(limit: 1).first?.id.description))["train"]?["losses"]))
        #expect(outputs["eval"]?["gate"] == expected.gate)
    }
}
