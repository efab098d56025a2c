import AdaptCore
import Foundation
import JobQueue
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// A bad batch must not keep a lineage stuck (issue 26, item 6): a `worse` night's eval step names the sources
/// imported since the active version and what each did to held-out NLL, and with `eval.on_worse: quarantine`
/// the blamed sources' examples stay out of later nights' training. On the tiny model, through the built
/// executables.
///
/// The scenario: night 1 trains on the logbook lineage and is promoted (v1). Then two sources arrive: `junk`
/// (strings of random letters and digits, unlike anything the lineage says) and `night-6` (in the lineage's
/// voice). Every example may be trained on once, so night 2 trains on those two sources alone and comes out
/// worse than v1; the attribution blames `junk` and not `night-6`. Night 2 trains from zero (`train.init: fresh`):
/// started from v1, two small sources do not undo what v1 learnt, and the night comes out better.
@Suite(.serialized, .timeLimit(.minutes(10))) struct QuarantineStepTests {
    static func pipeline(onWorse: String) -> String {
        """
        {"seed": 7,
         "train": {"steps": 16, "checkpoint_interval": 4, "batch_size": 2, "warmup_steps": 2, "max_length": 96,
                   "early_stopping": null, "learning_rate": 0.01, "init": "fresh"},
         "eval": {"on_worse": "\(onWorse)"},
         "device": {"min_available_memory_mb": 64}}
        """
    }

    /// Ten lines whose completions are 30 "words" of 3 to 9 characters drawn from `qxzjkvw0-9` (a fixed LCG).
    static func junk() -> String {
        var state: UInt64 = 5
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        let letters = Array("qxzjkvw0123456789")
        return (0..<10).map { i in
            let words = (0..<30).map { _ in String((0..<(3 + next(7))).map { _ in letters[next(letters.count)] }) }
            return "{\"prompt\": \"junk prompt \(i)\", \"completion\": \"\(words.joined(separator: " "))\"}"
        }.joined(separator: "\n") + "\n"
    }

    struct Scenario {
        let fixture: PipelineFixture
        let night1: String
        let night2: String
    }

    /// Night 1 run and finished; the two sources imported; night 2 enqueued and, unless `run` is false, run.
    static func worseNight(onWorse: String, run: Bool = true) async throws -> Scenario {
        let fixture = try await PipelineFixture.make(pipeline: pipeline(onWorse: onWorse))
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "1"]))
        let night1 = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(try fixture.outputs(night1)["eval"]?["outcome"] == .string("better"), "night 1 must make v1 the incumbent")

        let junkFile = fixture.directory.file("junk.jsonl")
        try Data(junk().utf8).write(to: junkFile)
        try fixture.expectSuccess(await fixture.adapt(["data", "import", junkFile.path, "--lineage", "logbook", "--source", "junk"]))
        let voice = PipelineFixture.root.appendingPathComponent("pipelines/examples/logbook/nights/night-6.jsonl").path
        try fixture.expectSuccess(await fixture.adapt(["data", "import", voice, "--lineage", "logbook", "--source", "night-6"]))
        let night2 = try await enqueue(fixture, night: "2026-12-01")
        if run { try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"])) }
        return Scenario(fixture: fixture, night1: night1, night2: night2)
    }

    static func enqueue(_ fixture: PipelineFixture, night: String) async throws -> String {
        let result = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "tiny.gguf", "--night", night, "--json"])
        try fixture.expectSuccess(result)
        return try #require(try JSON.decode(JSONValue.self, from: result.stdout, context: "enqueue")["run_id"]?.stringValue)
    }

    static func json(_ fixture: PipelineFixture, _ arguments: [String]) async throws -> JSONValue {
        let result = try await fixture.adapt(arguments + ["--json"])
        try fixture.expectSuccess(result)
        return try JSON.decode(JSONValue.self, from: result.stdout, context: arguments.joined(separator: " "))
    }

    /// Ids of the examples of `source` that are quarantined, and of all its training examples.
    static func examples(_ fixture: PipelineFixture, source: String) async throws -> (quarantined: Set<String>, train: Set<String>) {
        let list = try await json(fixture, ["data", "list", "--lineage", "logbook"]).arrayValue ?? []
        let mine = list.filter { $0["source"]?.stringValue == source }
        return (Set(mine.filter { $0["quarantined"] == .bool(true) }.compactMap { $0["id"]?.stringValue }),
                Set(mine.filter { $0["split"] == .string("train") }.compactMap { $0["id"]?.stringValue }))
    }

    static func quarantinedCount(_ fixture: PipelineFixture) async throws -> Int? {
        try await json(fixture, ["data", "stats", "--lineage", "logbook"]).arrayValue?.first?["quarantined"]?.intValue
    }

    @Test func aWorseNightNamesExactlyTheSourcesImportedSinceTheActiveVersion() async throws {
        let scenario = try await Self.worseNight(onWorse: "keep")
        let eval = try #require(try scenario.fixture.outputs(scenario.night2)["eval"])
        try #require(eval["outcome"] == .string("worse"), "\(eval["gate"] ?? .null)")
        let attribution = try #require(eval["attribution"])
        #expect(attribution["method"] == .string("gradient_alignment"))
        // The logbook's own sources (imported before v1 was trained) are not named; held-out examples never are.
        let named = (attribution["sources"]?.arrayValue ?? []).compactMap { $0["source"]?.stringValue }
        #expect(named == ["junk", "night-6"])
        let v1 = try #require(try await Self.json(scenario.fixture, ["registry", "list"]).arrayValue?.first { $0["version"] == .string("v1") })
        #expect(attribution["since"] == v1["created_at"], "the window starts when the active version was registered")
        for source in attribution["sources"]?.arrayValue ?? [] {
            #expect(source["trained_examples"]?.intValue ?? 0 > 0)
            #expect(source["nll_change"]?.doubleValue != nil)
        }
        #expect(attribution["blamed"] == .array([.string("junk")]), "\(attribution)")
    }

    @Test func aWorseOutcomeWithOnWorseKeepQuarantinesNothing() async throws {
        let scenario = try await Self.worseNight(onWorse: "keep")
        let eval = try #require(try scenario.fixture.outputs(scenario.night2)["eval"])
        try #require(eval["outcome"] == .string("worse"))
        #expect(eval["on_worse"] == .string("keep"))
        #expect(eval["attribution"]?["blamed"]?.arrayValue?.isEmpty == false, "a source was blamed, and still kept")
        #expect(eval["quarantined_sources"] == .array([]))
        #expect(try await Self.quarantinedCount(scenario.fixture) == 0)
    }

    @Test func aWorseOutcomeWithQuarantineKeepsTheBlamedSourceOutOfLaterNightsUntilReleased() async throws {
        let scenario = try await Self.worseNight(onWorse: "quarantine")
        let fixture = scenario.fixture
        let eval = try #require(try fixture.outputs(scenario.night2)["eval"])
        try #require(eval["outcome"] == .string("worse"))
        #expect(eval["quarantined_sources"] == .array([.string("junk")]))
        let junk = try await Self.examples(fixture, source: "junk")
        #expect(!junk.train.isEmpty && junk.quarantined == junk.train, "every training example of the blamed source, and only those")
        #expect(try await Self.examples(fixture, source: "night-6").quarantined.isEmpty)
        #expect(try await Self.quarantinedCount(fixture) == junk.train.count)

        // Every example may now be trained on again, but night 3 samples around the quarantine.
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "5"]))
        let night3 = try await Self.enqueue(fixture, night: "2026-12-02")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let sampled = try Self.sampled(fixture, run: night3)
        #expect(sampled.isDisjoint(with: junk.train), "a quarantined example was sampled")
        #expect(try await Self.examples(fixture, source: "night-6").train.isSubset(of: sampled))

        let released = try await Self.json(fixture, ["data", "release", "--lineage", "logbook", "--source", "junk"])
        #expect(released["released"]?.intValue == junk.train.count)
        #expect(try await Self.quarantinedCount(fixture) == 0)
        let night4 = try await Self.enqueue(fixture, night: "2026-12-03")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        #expect(junk.train.isSubset(of: try Self.sampled(fixture, run: night4)), "released examples are sampled again")
    }

    @Test func replayOfRunsWithAQuarantineStaysEqual() async throws {
        let scenario = try await Self.worseNight(onWorse: "quarantine")
        let fixture = scenario.fixture
        try #require(try fixture.outputs(scenario.night2)["eval"]?["quarantined_sources"] == .array([.string("junk")]))
        try fixture.expectSuccess(await fixture.adapt(["data", "policy", "--lineage", "logbook", "--max-uses", "5"]))
        let night3 = try await Self.enqueue(fixture, night: "2026-12-02")
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        // Night 2 wrote the quarantine; night 3's buffer snapshot holds it and its sample skipped it.
        for run in [scenario.night1, scenario.night2, night3] {
            let report = try await Self.json(fixture, ["replay", run, "--check"])
            #expect(report["equal"] == .bool(true), "\(run): \(report["first_difference"] ?? .null)")
        }
    }

    @Test func theQuarantineIsNotWrittenWhenTheEvalCompletionIsFencedOut() async throws {
        let scenario = try await Self.worseNight(onWorse: "quarantine", run: false)
        let fixture = scenario.fixture
        for kind in ["prune", "sample", "train"] {
            try fixture.expectSuccess(await StaleWorkerTests.worker(kind, fixture, ["--exit-when-idle"]))
        }
        let stale = try Executables.start("adapt-eval-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1500"],
                                          environment: ["ADAPT_TEST_PAUSE_AT": "eval.before-finalize"], outputIn: fixture.directory.url)
        try await StaleWorkerTests.waitUntilStopped(stale)
        #expect(try await Self.quarantinedCount(fixture) == 0, "the body wrote the quarantine before its completion")

        // Stopped past its lease, in a run cancelled meanwhile (so that no attempt of the step runs again and
        // writes the same quarantine): its completion, and the quarantine in it, must be refused.
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let expiry = try #require(try database.scalar("SELECT lease_expires_at FROM jobs WHERE kind = 'eval' AND state = 'running'").integerValue)
        while Int64(Date().timeIntervalSince1970 * 1000) <= expiry + 100 { try await Task.sleep(for: .milliseconds(50)) }
        try fixture.expectSuccess(await fixture.adapt(["cancel", scenario.night2]))
        stale.send(SIGCONT)
        #expect(try await blocking { stale.wait() } == 0, "\(stale.stderr)")
        #expect(stale.stderr.contains("1 blamed, quarantined"), "the attempt had a source to quarantine: \(stale.stderr)")
        #expect(stale.stderr.contains("1 lost their lease"), "\(stale.stderr)")
        #expect(!stale.stderr.contains("training example(s) of"), "the completion's quarantine ran: \(stale.stderr)")
        #expect(try await Self.quarantinedCount(fixture) == 0, "a worker that lost its lease quarantined examples")
        #expect(try fixture.outputs(scenario.night2)["eval"] == nil)
    }

    /// The ids of a run's training sample.
    static func sampled(_ fixture: PipelineFixture, run: String) throws -> Set<String> {
        let digest = try #require(try fixture.outputs(run)["sample"]?["train_snapshot"]?.stringValue.flatMap(Digest.init(hex:)))
        return Set(try DatasetSnapshot.load(digest, from: fixture.directory.state.blobs).map(\.id))
    }
}
