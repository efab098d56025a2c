import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage
import Testing
import TestSupport

/// `train.blas_threads: auto` (the default): the worker that claims the train or eval step computes on every core it
/// may use (read here from a fake `/proc/self/status`, `ADAPT_SYSFS_ROOT`), records the count in the step's output,
/// the run's arithmetic and the registry, resumes a killed train step at its checkpoint's count, and replays at the
/// recorded count on a machine that would resolve another.
@Suite(.serialized, .timeLimit(.minutes(10))) struct AutoThreadsNightTests {
    /// A fake device tree under the fixture allowing `cpus`, and the environment that points workers at it.
    static func machine(_ fixture: PipelineFixture, _ name: String, cpus: String) throws -> [String: String] {
        let device = try FakeDevice(root: fixture.directory.file(name))
        try device.allowCPUs(cpus)
        return ["ADAPT_SYSFS_ROOT": device.root.path]
    }

    static func newestMetadata(_ fixture: PipelineFixture) throws -> JSONValue {
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        let text = try #require(try database.queryOne("SELECT metadata FROM registry_versions ORDER BY id DESC LIMIT 1")?.string("metadata"))
        return try JSON.decode(JSONValue.self, from: text, context: "registry metadata")
    }

    @Test func autoTakesTheSmallerOfTheAffinityAndTheControlGroupsQuota() throws {
        let directory = TemporaryDirectory("adapt-auto-quota")
        let device = try FakeDevice(root: directory.file("device"))
        try device.allowCPUs("0-15")
        #expect(StepThreads.available(root: device.root) == 16)
        for (path, text) in [("proc/self/cgroup", "0::/\n"), ("sys/fs/cgroup/cpu.max", "200000 100000\n")] {
            let url = device.root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        #expect(StepThreads.available(root: device.root) == 2)
    }

    @Test func anAutoNightRunsAtTheClaimingWorkersCoresRecordsThemAndReplaysAtThemElsewhere() async throws {
        let fixture = try await PipelineFixture.make()
        let three = try Self.machine(fixture, "three-cores", cpus: "0-2")
        let run = try await fixture.enqueue()
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"], environment: three))

        let outputs = try fixture.outputs(run)
        for step in ["train", "eval"] {
            #expect(outputs[step]?["input"]?["blas_threads"] == .string("auto"), "\(step)")
            #expect(outputs[step]?["inputs"]?["blas_threads"] == .int(3), "\(step)")
        }
        let manifest = try fixture.queue().run(try #require(RunID.parse(run))).manifest
        #expect(manifest["blas_threads"] == .string("auto"))
        #expect(manifest["arithmetic"]?["train"]?["threads"] == .int(3))
        #expect(manifest["arithmetic"]?["eval"]?["threads"] == .int(3))
        #expect(try Self.newestMetadata(fixture)["training"]?["blas_threads"] == .int(3))

        // On a machine that would resolve 1 thread, the replay runs each step at its recorded 3: equal, and no
        // arithmetic difference to report.
        let one = try Self.machine(fixture, "one-core", cpus: "0")
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"], environment: one)
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        let report = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay: \(replay.stderr)")
        #expect(report["equal"] == .bool(true))
        #expect(report["arithmetic_difference"] == .null)
    }

    @Test func aTrainStepKilledAndResumedOnAMachineWithFewerCoresKeepsItsCheckpointsCount() async throws {
        let pipeline = PipelineFixture.pipeline(steps: 120, checkpointInterval: 10)
        let calm = try await PipelineFixture.make(pipeline: pipeline)
        let calmRun = try await calm.enqueue()
        try calm.expectSuccess(await calm.adapt(["work", "--exit-when-idle"], environment: try Self.machine(calm, "two-cores", cpus: "0-1")))
        let expected = try #require(try calm.outputs(calmRun)["train"])
        #expect(expected["inputs"]?["blas_threads"] == .int(2))

        let fixture = try await PipelineFixture.make(pipeline: pipeline)
        let two = try Self.machine(fixture, "two-cores", cpus: "0-1")
        let one = try Self.machine(fixture, "one-core", cpus: "0")
        let run = try await fixture.enqueue()
        for kind in ["prune", "sample"] {
            try fixture.expectSuccess(await Executables.runAsync("adapt-\(kind)-worker", ["--state", fixture.statePath, "--exit-when-idle"],
                                                                 environment: two))
        }
        let queue = try fixture.queue()
        let train = try #require(try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first)
        let worker = try Executables.start("adapt-train-worker", ["--state", fixture.statePath, "--exit-when-idle", "--lease-ms", "1000"],
                                           environment: two, outputIn: fixture.directory.url)
        let deadline = ContinuousClock.now + .seconds(120)
        while try queue.checkpointPointer(job: train.id) == nil, worker.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        worker.send(SIGKILL)
        _ = try await blocking { worker.wait() }
        try #require(try queue.job(train.id).state != .succeeded, "the train step finished before it could be killed")

        // The step comes back on a machine that would resolve 1 thread: it resumes at its checkpoint's 2.
        try await Task.sleep(for: .milliseconds(1100))
        try fixture.expectSuccess(await fixture.adapt(["work", "--exit-when-idle"], environment: one))
        #expect(try queue.events(job: train.id).contains { $0.message?.hasPrefix("resumed from checkpoint") == true })
        let outputs = try fixture.outputs(run)
        #expect(outputs["train"]?["inputs"]?["blas_threads"] == .int(2))
        #expect(outputs["train"]?["adapter_digest"] == expected["adapter_digest"])
        #expect(outputs["train"]?["losses"] == expected["losses"])
        // The eval step was claimed on the one-core machine: it resolved there, and said so.
        #expect(outputs["eval"]?["inputs"]?["blas_threads"] == .int(1))
        let manifest = try queue.run(try #require(RunID.parse(run))).manifest
        #expect(manifest["arithmetic"]?["train"]?["threads"] == .int(2))
        #expect(try Self.newestMetadata(fixture)["training"]?["blas_threads"] == .int(2))

        // Replayed on a two-core machine, each step runs at what it recorded (train 2, eval 1).
        let replay = try await fixture.adapt(["replay", run, "--check", "--json"], environment: two)
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
    }
}
