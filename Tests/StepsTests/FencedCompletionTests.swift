import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage
import Testing
import TestSupport

/// Prune and sample write nothing until their job completes (`StepOutput.finalize`, run in the completion
/// transaction), and the completion refuses to record a result the buffer no longer gives. Replay applies the
/// same writes in its scratch state.
@Suite(.serialized) struct FencedCompletionTests {
    /// The step body of `kind` of the prepared run, run in this process on the fixture's state.
    static func body(_ kind: String, _ fixture: PipelineFixture, run: String, database: Database) throws -> StepOutput {
        let queue = try JobQueue(database: database)
        let runID: RunID = try #require(RunID.parse(run))
        let job = try #require(try queue.jobs(matching: .init(run: runID)).first { $0.kind == kind })
        let context = StepContext(environment: StepEnvironment(state: fixture.directory.state, database: database),
                                  name: job.name, input: job.input, manifest: try queue.run(job.runID).manifest,
                                  ancestors: try StepRunner.ancestorOutputs(queue: queue, job: job.id))
        guard case let .completed(output) = try StepRunner.run(kind: kind, context) else {
            Issue.record("\(kind) was deferred")
            throw CancellationError()
        }
        return output
    }

    static func count(_ database: Database, _ sql: String) throws -> Int { Int(try database.scalar(sql).integerValue ?? -1) }

    @Test func pruneDeletesOnlyInItsCompletionAndRefusesABufferThatChangedMeanwhile() async throws {
        let (fixture, run) = try await StaleWorkerTests.prepared()
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let output = try Self.body("prune", fixture, run: run, database: database)
        #expect(output.result["deleted"] == .int(6))
        #expect(try Self.count(database, "SELECT count(*) FROM replay_examples") == 90, "the body deleted")

        // Two more examples expire before the completion: the deletion would not match the output.
        try database.run("""
            UPDATE replay_examples SET expires_at = expires_at - ? WHERE id IN
            (SELECT id FROM replay_examples WHERE split = 'train' ORDER BY id LIMIT 2 OFFSET 6)
            """, StaleWorkerTests.fortyDays)
        let finalize = try #require(output.finalize)
        #expect(throws: StepError.bufferChanged(step: "prune", lineage: "logbook")) {
            try database.transaction { try finalize(database) }
        }
        #expect(try Self.count(database, "SELECT count(*) FROM replay_examples") == 90, "a refused completion deleted")

        let again = try Self.body("prune", fixture, run: run, database: database)
        #expect(again.result["deleted"] == .int(8))
        let finalizeAgain = try #require(again.finalize)
        try database.transaction { try finalizeAgain(database) }
        #expect(try Self.count(database, "SELECT count(*) FROM replay_examples") == 82)
    }

    @Test func sampleSpendsTheBudgetOnlyInItsCompletionAndRefusesABufferThatChangedMeanwhile() async throws {
        let (fixture, run) = try await StaleWorkerTests.prepared()
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let output = try Self.body("sample", fixture, run: run, database: database)
        let trainExamples = try #require(output.result["train_examples"]?.intValue)
        #expect(trainExamples > 0)
        #expect(try Self.count(database, "SELECT count(*) FROM replay_uses") == 0, "the body recorded uses")
        let snapshot = try #require(output.result["train_snapshot"]?.stringValue.flatMap(Digest.init(hex:)))
        #expect(fixture.directory.state.blobs.contains(snapshot), "the snapshot the next step reads is not stored")

        // An example of tonight's sample is forgotten before the completion.
        let firstLine = try #require(try fixture.directory.state.blobs.get(snapshot).split(separator: 0x0A).first)
        let sampled = try #require(try JSON.decode(JSONValue.self, from: Data(firstLine), context: "snapshot line")["id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["data", "forget", "--id", sampled]))
        let finalize = try #require(output.finalize)
        #expect(throws: StepError.bufferChanged(step: "sample", lineage: "logbook")) {
            try database.transaction { try finalize(database) }
        }
        #expect(try Self.count(database, "SELECT count(*) FROM replay_uses") == 0, "a refused completion spent budget")
        #expect(!fixture.directory.state.blobs.contains(snapshot), "the refused snapshot still holds the forgotten text")

        let again = try Self.body("sample", fixture, run: run, database: database)
        let finalizeAgain = try #require(again.finalize)
        try database.transaction { try finalizeAgain(database) }
        #expect(try Self.count(database, "SELECT count(*) FROM replay_uses") == again.result["train_examples"]?.intValue)
    }

    @Test func aRunWhosePruneDeletedExamplesSaysItsInputExpiredInsteadOfReplaying() async throws {
        // Expiry reaches every copy: the prune's own buffer snapshot held the expired text, so it was erased in
        // the prune's completion, and the run cannot be replayed any more; it must say why.
        let (fixture, run) = try await StaleWorkerTests.prepared()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try fixture.outputs(run)["prune"]?["deleted"] == .int(6))
        let result = try await fixture.adapt(["replay", run, "--check", "--json"])
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay output: \(result.stderr)")
        #expect(result.status == 2, "\(report)")
        #expect(report["replayable"]?.boolValue == false)
        #expect(result.stderr.contains("expired"), "\(result.stderr)")
    }
}
