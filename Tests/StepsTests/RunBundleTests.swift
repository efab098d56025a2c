import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport
import Training

/// `adapt run export RUN --out FILE` and `adapt replay --bundle FILE --check`: a run recorded in one state
/// replays equal from its bundle where no state exists; a bundle that was altered, cut short or meets another
/// model cannot be replayed (exit 2, naming what differs), and nothing is written outside the scratch.
@Suite(.serialized) struct RunBundleTests {
    /// Two nights of the logbook lineage, so the second run's eval and promote read the first night's adapter.
    func twoNights() async throws -> (PipelineFixture, run: String) {
        let fixture = try await PipelineFixture.make()
        _ = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let second = try await fixture.adapt(["enqueue", "nightly", "--lineage", "logbook", "--pipeline", fixture.pipelinePath,
                                              "--model", "tiny.gguf", "--night", "2026-12-01", "--json"])
        try fixture.expectSuccess(second)
        let run = try #require(try JSON.decode(JSONValue.self, from: second.stdout, context: "enqueue")["run_id"]?.stringValue)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        return (fixture, run)
    }

    func export(_ fixture: PipelineFixture, _ run: String) async throws -> URL {
        let out = fixture.directory.file("run.bundle")
        let result = try await fixture.adapt(["run", "export", run, "--out", out.path, "--include-user-data", "--json"])
        try fixture.expectSuccess(result)
        let json = try JSON.decode(JSONValue.self, from: result.stdout, context: "export output")
        #expect(json["include_user_data"] == .bool(true))
        // The buffer snapshot, and the first night's adapter: eval's incumbent and promote's active one, stored once.
        #expect(json["blobs"]?.intValue == 2)
        return out
    }

    /// A machine with no state: an empty working area whose `--state` does not exist, its own TMPDIR.
    struct Elsewhere {
        let root: URL
        var state: URL { root.appendingPathComponent("no-state") }
        var temporary: URL { root.appendingPathComponent("tmp") }

        init(_ fixture: PipelineFixture) throws {
            root = fixture.directory.file("elsewhere")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        }

        func replay(_ bundle: URL, model: URL, json: Bool = true) throws -> ProcessResult {
            try Executables.run("adapt", ["--state", state.path, "replay", "--bundle", bundle.path, "--model", model.path, "--check"]
                                + (json ? ["--json"] : []), environment: ["TMPDIR": temporary.path])
        }

        /// Nothing but the (now empty) temporary directory exists after a replay.
        func expectNothingLeft(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(!FileManager.default.fileExists(atPath: state.path), "the state must not be created", sourceLocation: sourceLocation)
            #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["tmp"], sourceLocation: sourceLocation)
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty, "the scratch is removed", sourceLocation: sourceLocation)
        }
    }

    var model: (PipelineFixture) -> URL { { $0.directory.state.models.appendingPathComponent("tiny.gguf") } }

    @Test func anExportedRunReplaysEqualFromItsBundleWhereNoStateExists() async throws {
        let (fixture, run) = try await twoNights()
        let bundle = try await export(fixture, run)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: bundle.path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600, "a bundle may hold user text")
        let elsewhere = try Elsewhere(fixture)
        let result = try elsewhere.replay(bundle, model: model(fixture))
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay output: \(result.stderr)")
        #expect(report["equal"] == .bool(true))
        #expect(report["first_difference"] == .null)
        #expect(report["run_id"]?.stringValue == run)
        #expect(report["include_user_data"] == .bool(true))
        #expect(report["steps"]?.arrayValue?.map { $0["name"]?.stringValue ?? "" } == ["prune", "sample", "train", "eval", "promote"])
        #expect(result.stderr.contains("holds user data"), "every reader says the bundle holds user data")
        try elsewhere.expectNothingLeft()

        let human = try elsewhere.replay(bundle, model: model(fixture), json: false)
        #expect(human.status == 0, "\(human.stderr)")
        #expect(human.stdout.contains("every compared value is equal (5 steps)"))
        try elsewhere.expectNothingLeft()
    }

    @Test func exportOfALineageHoldingUserTextIsRefusedWithoutTheFlag() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let out = fixture.directory.file("refused.bundle")
        let result = try await fixture.adapt(["run", "export", run, "--out", out.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--include-user-data"), "\(result.stderr)")
        #expect(result.stderr.contains("lineage logbook"))
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// The bundle's JSON document, to edit as someone tampering with a bundle would.
    func document(_ bundle: URL) throws -> [String: JSONValue] {
        let data = try Data(contentsOf: bundle)
        let json = try Zstd.decompress(data.dropFirst(8))
        return try #require(try JSON.decode(JSONValue.self, from: json, context: "bundle").objectValue)
    }

    func write(_ document: [String: JSONValue], to url: URL) throws {
        try (Data("ADAPTRB1".utf8) + Zstd.compress(JSON.canonical(JSONValue.object(document)))).write(to: url)
    }

    @Test func anAlteredTruncatedOrMismatchedBundleCannotBeReplayedAndSaysWhatDiffers() async throws {
        let (fixture, run) = try await twoNights()
        let bundle = try await export(fixture, run)
        let elsewhere = try Elsewhere(fixture)

        // An input blob altered (one byte of the buffer snapshot), its digest left as recorded.
        var altered = try document(bundle)
        let prune = try #require(altered["steps"]?.arrayValue?.first { $0["kind"]?.stringValue == "prune" })
        let snapshot = try #require(prune["output"]?["inputs"]?["buffer_snapshot"]?.stringValue)
        var blobs = try #require(altered["blobs"]?.objectValue)
        let encodedSnapshot = try #require(blobs[snapshot]?.stringValue)
        var bytes = try #require(Data(base64Encoded: encodedSnapshot))
        bytes[bytes.count / 2] ^= 0x20
        blobs[snapshot] = .string(bytes.base64EncodedString())
        altered["blobs"] = .object(blobs)
        let alteredURL = fixture.directory.file("altered.bundle")
        try write(altered, to: alteredURL)
        let a = try elsewhere.replay(alteredURL, model: model(fixture))
        #expect(a.status == 2, "\(a.stderr)")
        #expect(a.stderr.contains("prune's inputs.buffer_snapshot"), "\(a.stderr)")
        #expect(a.stderr.contains("altered") && a.stderr.contains(snapshot))
        let aJSON = try JSON.decode(JSONValue.self, from: a.stdout, context: "altered")
        #expect(aJSON["replayable"] == .bool(false))
        #expect(aJSON["include_user_data"] == .bool(true))
        try elsewhere.expectNothingLeft()

        // Another model file than the one recorded.
        let other = fixture.directory.file("other.gguf")
        try fixture.expectSuccess(await fixture.adapt(["model", "tiny", "--seed", "1", "--out", other.path]))
        let m = try elsewhere.replay(bundle, model: other)
        #expect(m.status == 2)
        #expect(m.stderr.contains("SHA-256 \(try Digest.sha256(fileAt: other).hex)"), "\(m.stderr)")
        #expect(m.stderr.contains(try Digest.sha256(fileAt: model(fixture)).hex))
        try elsewhere.expectNothingLeft()

        // No model file at all.
        let missing = try elsewhere.replay(bundle, model: fixture.directory.file("absent.gguf"))
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no model file at"), "\(missing.stderr)")
        try elsewhere.expectNothingLeft()

        // Cut short, as an interrupted download would be.
        let data = try Data(contentsOf: bundle)
        let truncated = fixture.directory.file("truncated.bundle")
        try data.prefix(data.count / 2).write(to: truncated)
        let t = try elsewhere.replay(truncated, model: model(fixture))
        #expect(t.status == 2)
        #expect(t.stderr.contains("damaged or truncated"), "\(t.stderr)")
        try elsewhere.expectNothingLeft()

        // A recorded digest edited in the bundle is a difference, named like any other: exit 1.
        var edited = try document(bundle)
        var steps = try #require(edited["steps"]?.arrayValue)
        let trainIndex = try #require(steps.firstIndex { $0["kind"]?.stringValue == "train" })
        var train = try #require(steps[trainIndex].objectValue)
        var output = try #require(train["output"]?.objectValue)
        var losses = try #require(output["losses"]?.arrayValue)
        let recordedLoss = losses[0]
        losses[0] = .double((recordedLoss.doubleValue ?? 0) + 1)
        output["losses"] = .array(losses)
        train["output"] = .object(output)
        steps[trainIndex] = .object(train)
        edited["steps"] = .array(steps)
        let editedURL = fixture.directory.file("edited.bundle")
        try write(edited, to: editedURL)
        let e = try elsewhere.replay(editedURL, model: model(fixture))
        #expect(e.status == 1, "\(e.stderr)")
        let eJSON = try JSON.decode(JSONValue.self, from: e.stdout, context: "edited")
        #expect(eJSON["first_difference"]?["step"]?.stringValue == "train")
        #expect(eJSON["first_difference"]?["field"]?.stringValue == "losses[0]")
        #expect(eJSON["first_difference"]?["actual"] == recordedLoss)
        try elsewhere.expectNothingLeft()
    }
}

/// Item 3 of issue 24: a run records what its bits depend on, deterministic runs pin OpenBLAS's kernels, and a
/// replay under other kernels says so.
@Suite(.serialized) struct RunArithmeticTests {
    @Test func theManifestRecordsThePinnedArithmeticOfTrainAndEval() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let queue = try fixture.queue()
        let manifest = try queue.run(try #require(RunID.parse(run))).manifest
        let arithmetic = try #require(manifest["arithmetic"]?.objectValue)
        #expect(Set(arithmetic.keys) == ["train", "eval"])
        let train = try #require(arithmetic["train"])
        #expect(train["threads"] == .int(1))
        #expect(train["openblas"]?.stringValue?.hasPrefix("OpenBLAS ") == true)
        #if arch(x86_64)
        if BLASCoreTypeProbe.hasAVX2 && ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] == nil {
            #expect(train["core_type"] == .string("Haswell"), "every AVX2 machine computes with the same kernels")
            #expect(train["pinned"] == .bool(true))
        }
        #endif
    }

    @Test func aReplayUnderOtherKernelsSaysWhyItsBitsMayDiffer() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        // Sandybridge's kernels (AVX, no FMA) run on every AVX2 machine and are not Haswell's.
        let result = try await fixture.adapt(["replay", run, "--json"], environment: ["OPENBLAS_CORETYPE": "Sandybridge"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay: \(result.stderr)")
        let difference = try #require(report["arithmetic_difference"]?.objectValue, "\(result.stdout)")
        #expect(difference["step"] == .string("train"))
        #expect(difference["here"]?["core_type"] == .string("Sandybridge"))
        #expect(difference["reason"]?.stringValue?.contains("core type Sandybridge here") == true)
    }
}

enum BLASCoreTypeProbe {
    static var hasAVX2: Bool {
        let text = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return text.contains(" avx2") && text.contains(" fma")
    }
}

/// A checkpoint records the arithmetic that computed it; a worker resuming it under other kernels says, in the
/// job's events, that the result will differ from an uninterrupted run.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CheckpointArithmeticTests {
    @Test func aTrainStepResumedUnderOtherKernelsSaysItsResultWillDiffer() async throws {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 300, checkpointInterval: 10))
        let run = try await fixture.enqueue()
        for kind in ["prune", "sample"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"]))
        }
        let queue = try fixture.queue()
        let train = try #require(try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first)
        // The first worker computes with Sandybridge's kernels (as a machine OpenBLAS gives them to would).
        let worker = try Executables.start("adapt-train-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1000"],
                                           environment: ["OPENBLAS_CORETYPE": "Sandybridge"], outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(120)
        while worker.isRunning, Date() < deadline, try queue.checkpointPointer(job: train.id) == nil {
            try await Task.sleep(for: .milliseconds(5))
        }
        worker.send(SIGKILL)
        _ = try await blocking { worker.wait() }
        #expect(try queue.job(train.id).state == .running, "the train step ended before it was killed: \(worker.stderr)")

        try await Task.sleep(for: .milliseconds(1_100))
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let events = try fixture.queue().events(job: train.id).compactMap(\.message)
        let note = try #require(events.first { $0.hasPrefix("resumed under other arithmetic") }, "\(events)")
        #expect(note.contains("here, Sandybridge recorded"), "\(note)")
        #expect(note.contains("the result will differ from an uninterrupted run"))
    }
}
