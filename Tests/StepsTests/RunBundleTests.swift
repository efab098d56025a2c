import AdaptCore
import Foundation
import JobQueue
import Model
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
        // The fixture's pipeline leaves `blas_threads` at `auto`: the count the train step resolved and recorded.
        let resolved = try fixture.outputs(run)["train"]?["inputs"]?["blas_threads"]
        #expect(resolved != nil && train["threads"] == resolved)
        // Both steps kept the base in the file's types, the default.
        #expect(train["base_weights"] == .string("quantized") && arithmetic["eval"]?["base_weights"] == .string("quantized"))
        // And multiplied it in their forward passes with the kernels this CPU runs for the default, int8.
        let forward = JSONValue.string(ForwardProducts.int8.kernelName(storage: .quantized))
        #expect(train["forward_kernels"] == forward && arithmetic["eval"]?["forward_kernels"] == forward)
        #expect(train["openblas"]?.stringValue?.hasPrefix("OpenBLAS ") == true)
        #if arch(x86_64)
        if BLASCoreTypeProbe.hasAVX2 && ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"] == nil {
            #expect(train["core_type"] == .string("Haswell"), "every AVX2 machine computes with the same kernels")
            #expect(train["pinned"] == .bool(true))
        }
        #endif
    }

    /// The int8 forward products turned off where they ran (`ADAPT_PROMPT_KERNELS=sgemm`).
    @Test(.enabled(if: ForwardProducts.int8.kernelName(storage: .quantized) != "sgemm", "the int8 forward kernels do not run on this CPU"))
    func aReplayWithoutTheRecordedForwardKernelsRefusesToCompareBitsAndNamesThem() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let result = try await fixture.adapt(["replay", run, "--check", "--json"], environment: ["ADAPT_PROMPT_KERNELS": "sgemm"])
        #expect(result.status == 2, "\(result.stderr)")
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay: \(result.stderr)")
        let difference = try #require(report["arithmetic_difference"]?.objectValue, "\(result.stdout)")
        #expect(difference["fields"] == .array([.string("arithmetic.train.forward_kernels")]))
        #expect(difference["reason"] == .string("forward products sgemm here, int8-v1 recorded"))
        let same = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(same.status == 0, "\(same.stderr)")
        #expect(try JSON.decode(JSONValue.self, from: same.stdout, context: "replay")["equal"] == .bool(true))
    }

    @Test(.enabled(if: BLASCoreTypeProbe.older != nil, BLASCoreTypeProbe.noOlderKernels))
    func aReplayWhoseUserSetOlderKernelsThanRecordedRefusesToCompareBitsAndNamesTheFieldThatDiffers() async throws {
        let older = try #require(BLASCoreTypeProbe.older)
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        // Recorded with this machine's kernels, replayed where its user set older ones, which adapt never replaces by newer.
        let result = try await fixture.adapt(["replay", run, "--check", "--json"], environment: ["OPENBLAS_CORETYPE": older])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("arithmetic.train.core_type") && result.stderr.contains("--tolerance"), "\(result.stderr)")
        let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay: \(result.stderr)")
        #expect(report["replayable"] == .bool(false))
        #expect(report["comparison"]?["mode"] == .string("bits"))
        let difference = try #require(report["arithmetic_difference"]?.objectValue, "\(result.stdout)")
        #expect(difference["step"] == .string("train"))
        #expect(difference["fields"] == .array([.string("arithmetic.train.core_type")]))
        #expect(difference["here"]?["core_type"]?.stringValue?.lowercased() == older.lowercased())
        #expect(difference["reason"]?.stringValue?.lowercased().contains("core type \(older.lowercased()) here") == true)
        #expect(difference["not_pinned"]?.stringValue?.contains("was set by its user") == true, "\(difference)")
        #expect(result.stderr.contains("OPENBLAS_CORETYPE="), "the message says which setting would compare bits: \(result.stderr)")
        let scratch = fixture.directory.state.root.appendingPathComponent("scratch").path
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []).isEmpty, "the scratch is removed")
    }
}

/// A run recorded with other kernels than adapt's own choice, which this CPU runs: replay executes itself again
/// with them and compares bits.
@Suite(.serialized) struct ReplayPinnedToRecordedKernelsTests {
    /// Whether or not this machine's environment sets a core type: the older kernels are safe under it.
    @Test(.enabled(if: BLASCoreTypeProbe.older != nil, BLASCoreTypeProbe.noOlderKernels))
    func aRunRecordedWithOlderKernelsThanThisMachinesReplaysBitForBitPinnedToThem() async throws {
        let older = try #require(BLASCoreTypeProbe.older)
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"], environment: ["OPENBLAS_CORETYPE": older]))
        let state = try await fixture.adapt(["replay", run, "--check", "--json"])
        #expect(state.status == 0, "\(state.stderr)")
        #expect(state.stderr.contains("executing again with OpenBLAS core type \(older)"), "\(state.stderr)")
        let stateJSON = try JSON.decode(JSONValue.self, from: state.stdout, context: "replay: \(state.stderr)")
        #expect(stateJSON["equal"] == .bool(true))
        #expect(stateJSON["arithmetic_difference"] == .null)
        #expect(stateJSON["comparison"]?["mode"] == .string("bits"))

        let bundle = fixture.directory.file("night.bundle")
        try fixture.expectSuccess(await fixture.adapt(["run", "export", run, "--out", bundle.path, "--include-user-data"]))
        let elsewhere = try RunBundleTests.Elsewhere(fixture)
        let result = try elsewhere.replay(bundle, model: fixture.directory.state.models.appendingPathComponent("tiny.gguf"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("executing again with OpenBLAS core type \(older)"), "\(result.stderr)")
        let json = try JSON.decode(JSONValue.self, from: result.stdout, context: "replay: \(result.stderr)")
        #expect(json["equal"] == .bool(true))
        #expect(json["arithmetic_difference"] == .null)
        try elsewhere.expectNothingLeft()
    }
}

/// `replay --bundle … --tolerance X` (issue 24): a bundle replayed under other kernels than recorded is refused
/// by bits (exit 2, naming the field), agrees within a loose tolerance, and names the first value outside a
/// tolerance of 0.
@Suite(.serialized) struct ReplayWithinToleranceTests {
    @Test(.enabled(if: BLASCoreTypeProbe.older != nil, BLASCoreTypeProbe.noOlderKernels))
    func aBundleReplayedWhereItsUserSetOlderKernelsIsComparedWithinTheTolerance() async throws {
        let older = try #require(BLASCoreTypeProbe.older)
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"]))
        let bundle = fixture.directory.file("night.bundle")
        try fixture.expectSuccess(await fixture.adapt(["run", "export", run, "--out", bundle.path, "--include-user-data"]))
        let elsewhere = try RunBundleTests.Elsewhere(fixture)
        let model = fixture.directory.state.models.appendingPathComponent("tiny.gguf")
        func replay(_ extra: [String]) throws -> (ProcessResult, JSONValue) {
            let result = try Executables.run("adapt", ["--state", elsewhere.state.path, "replay", "--bundle", bundle.path, "--model", model.path,
                                                       "--check", "--json"] + extra,
                                             environment: ["TMPDIR": elsewhere.temporary.path, "OPENBLAS_CORETYPE": older])
            return (result, try JSON.decode(JSONValue.self, from: result.stdout, context: "replay: \(result.stderr)"))
        }

        let (refused, refusedJSON) = try replay([])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("arithmetic.train.core_type"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--tolerance"))
        #expect(refusedJSON["arithmetic_difference"]?["fields"] == .array([.string("arithmetic.train.core_type")]))
        #expect(refusedJSON["include_user_data"] == .bool(true))
        try elsewhere.expectNothingLeft()

        let (loose, looseJSON) = try replay(["--tolerance", "0.05"])
        #expect(loose.status == 0, "\(loose.stderr)")
        #expect(looseJSON["equal"] == .bool(true), "\(loose.stdout)")
        #expect(looseJSON["comparison"]?["mode"] == .string("tolerance"))
        #expect(looseJSON["comparison"]?["tolerance"]?.doubleValue == 0.05)
        #expect(looseJSON["comparison"]?["from_step"] == .string("train"))
        let largest = try #require(looseJSON["comparison"]?["largest_difference"]?.objectValue, "the kernels move some bits: \(loose.stdout)")
        let seen = try #require(largest["difference"]?.doubleValue)
        #expect(seen > 0 && seen <= 0.05)
        print("largest difference under \(older)'s kernels: \(seen) at \(largest["step"]?.stringValue ?? "").\(largest["field"]?.stringValue ?? "")")
        try elsewhere.expectNothingLeft()

        let (strict, strictJSON) = try replay(["--tolerance", "0"])
        #expect(strict.status == 1, "\(strict.stderr)")
        let first = try #require(strictJSON["first_difference"]?.objectValue, "\(strict.stdout)")
        #expect(first["step"] == .string("train"))
        #expect(first["field"]?.stringValue?.hasPrefix("losses[") == true || first["field"]?.stringValue?.hasPrefix("validation_losses[") == true,
                "\(first)")
        #expect(strictJSON["comparison"]?["largest_difference"]?["field"] == first["field"])
        try elsewhere.expectNothingLeft()
    }
}

/// The OpenBLAS kernel sets the tests compute with. A machine's environment may set `OPENBLAS_CORETYPE` because
/// OpenBLAS's own choice is unsafe there, so the tests never replace it by anything not known to be safe under
/// it: a second set of kernels is always an older one (`BLASCoreType.isSafe`).
enum BLASCoreTypeProbe {
    static var hasAVX2: Bool {
        let text = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return text.contains(" avx2") && text.contains(" fma")
    }

    /// The kernels this machine computes with: its environment's, else adapt's own pin.
    static var own: String { ProcessInfo.processInfo.environment[BLASCoreType.variable] ?? BLASCoreType.portable }

    /// Kernels older than `own` that this CPU runs and that are safe under it (Sandybridge's below Haswell's
    /// or Zen's); nil when there are none.
    static var older: String? {
        let flags = BLASCoreType.cpuFlags()
        return ["Sandybridge", "Nehalem", "Core2", "Prescott"].first {
            $0.lowercased() != own.lowercased() && BLASCoreType.isSafe($0, under: own) && BLASCoreType.canRun($0, cpuFlags: flags)
        }
    }

    static let noOlderKernels: Comment = "no kernel set older than this environment's OPENBLAS_CORETYPE runs here"
}

/// A checkpoint records the arithmetic that computed it; a worker resuming it under other kernels executes
/// itself again pinned to the checkpoint's, so the run ends as an uninterrupted one, or, where it cannot (here:
/// a core type its user set), says in the job's events that the result will differ.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CheckpointArithmeticTests {
    /// A run whose train step was SIGKILLed after its first checkpoint, computed with `coreType`'s kernels (nil:
    /// this machine's own).
    func killedAfterACheckpoint(coreType: String?) async throws -> (PipelineFixture, run: String, train: JobID) {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 300, checkpointInterval: 10))
        let run = try await fixture.enqueue()
        for kind in ["prune", "sample"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"]))
        }
        let queue = try fixture.queue()
        let train = try #require(try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first)
        let worker = try Executables.start("adapt-train-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1000"],
                                           environment: coreType.map { [BLASCoreType.variable: $0] } ?? [:], outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(120)
        while worker.isRunning, Date() < deadline, try queue.checkpointPointer(job: train.id) == nil {
            try await Task.sleep(for: .milliseconds(5))
        }
        worker.send(SIGKILL)
        _ = try await blocking { worker.wait() }
        #expect(try queue.job(train.id).state == .running, "the train step ended before it was killed: \(worker.stderr)")
        try await Task.sleep(for: .milliseconds(1_100))
        return (fixture, run, train.id)
    }

    /// The checkpoint's kernels are older than this machine's, so they are safe under whatever its environment set.
    @Test(.enabled(if: BLASCoreTypeProbe.older != nil, BLASCoreTypeProbe.noOlderKernels))
    func aTrainStepResumedOnAWorkerOfNewerKernelsIsPinnedToItsCheckpointsAndEndsAsAnUninterruptedRun() async throws {
        let older = try #require(BLASCoreTypeProbe.older)
        let (fixture, run, train) = try await killedAfterACheckpoint(coreType: older)
        // A worker of this machine's kernels, supervised by `adapt work`, resumes it.
        let resumed = try await fixture.adapt(["work", "--workers", "train", "--exit-when-idle"])
        try fixture.expectSuccess(resumed)
        #expect(resumed.stderr.contains("executing again with OpenBLAS core type \(older)"), "\(resumed.stderr)")
        let events = try fixture.queue().events(job: train).compactMap(\.message)
        #expect(events.contains { $0.contains("executes itself again pinned to it") }, "\(events)")
        #expect(!events.contains { $0.hasPrefix("resumed under other arithmetic") }, "\(events)")
        #expect(try fixture.queue().job(train).state == .succeeded)
        // The rest of the run under the same kernels, so the whole run is one arithmetic.
        for kind in ["eval", "promote"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"],
                                                                 environment: [BLASCoreType.variable: older]))
        }
        let manifest = try fixture.queue().run(try #require(RunID.parse(run))).manifest
        #expect(manifest["arithmetic"]?["train"]?["core_type"]?.stringValue?.lowercased() == older.lowercased())
        // Replay re-executes the run uninterrupted under the same kernels: bit for bit the resumed run's.
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"], environment: [BLASCoreType.variable: older])
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let report = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay: \(replay.stderr)")
        #expect(report["equal"] == .bool(true))
        #expect(report["comparison"]?["mode"] == .string("bits"))
    }

    /// Newer kernels than the ones a user set are never put in their place: the step resumes under the user's.
    @Test(.enabled(if: BLASCoreTypeProbe.older != nil, BLASCoreTypeProbe.noOlderKernels))
    func aTrainStepResumedWhereItsUserSetOlderKernelsThanItsCheckpointsSaysItsResultWillDiffer() async throws {
        let older = try #require(BLASCoreTypeProbe.older)
        let (fixture, run, train) = try await killedAfterACheckpoint(coreType: nil)
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"], environment: [BLASCoreType.variable: older]))
        let events = try fixture.queue().events(job: train).compactMap(\.message)
        let note = try #require(events.first { $0.hasPrefix("resumed under other arithmetic") }, "\(events)")
        #expect(note.lowercased().contains("here, \(BLASCoreTypeProbe.own.lowercased()) recorded"), "\(note)")
        #expect(note.contains("the result will differ from an uninterrupted run"))
        #expect(note.contains("OPENBLAS_CORETYPE=\(older) was set by its user"), "\(note)")
        // And it does: an uninterrupted run under the checkpoint's kernels (replay) moves the trained numbers.
        let replay = try await fixture.adapt(["replay", run, "--check", "--json", "--tolerance", "0"])
        let report = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay: \(replay.stderr)")
        #expect(replay.status == 1, "\(replay.stdout)")
        #expect(report["first_difference"]?["step"] == .string("train"), "\(replay.stdout)")
    }
}
