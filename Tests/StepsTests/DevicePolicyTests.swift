import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage
import Testing
import TestSupport

/// The train step asks the device policy before it starts and after every checkpoint (issue 7): with
/// injected readings it defers on battery, heat and low memory, and resumes when they clear.
@Suite(.serialized) struct DevicePolicyTests {
    /// A fixture whose run has sampled (prune and sample ran in worker processes), and the train job's context.
    struct Sampled {
        let fixture: PipelineFixture
        let device: FakeDevice
        let run: RunID
        let train: JobRecord
        let manifest: JSONValue
        let sample: JSONValue

        static func make(steps: Int = 16) async throws -> Sampled {
            let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(
                steps: steps, checkpointInterval: 4, device: #"{"min_available_memory_mb": 1024, "retry_after_minutes": 30}"#))
            let device = try FakeDevice(root: fixture.directory.file("device"))
            let run = try #require(RunID.parse(try await fixture.enqueue()))
            try fixture.expectSuccess(await fixture.adapt(["work", "--workers", "prune,sample", "--exit-when-idle"]))
            let queue = try fixture.queue()
            let jobs = try queue.jobs(matching: .init(run: run))
            return Sampled(fixture: fixture, device: device, run: run, train: try #require(jobs.first { $0.kind == "train" }),
                           manifest: try queue.run(run).manifest, sample: try #require(jobs.first { $0.kind == "sample" }?.output))
        }

        /// Runs the train body in this process, as a worker would, with `pointer` as its checkpoint pointer.
        func train(pointer: MemoryCheckpointPointer, progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> StepOutcome {
            let (fixture, device, train, manifest, sample) = (fixture, device, train, manifest, sample)
            return try await blocking { try Self.train(fixture, device, train, manifest, sample, pointer, progress) }
        }

        static func train(_ fixture: PipelineFixture, _ device: FakeDevice, _ train: JobRecord, _ manifest: JSONValue,
                          _ sample: JSONValue, _ pointer: MemoryCheckpointPointer,
                          _ progress: @escaping @Sendable (String) -> Void) throws -> StepOutcome {
            let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
            let environment = StepEnvironment(state: fixture.directory.state, database: database, deviceRoot: device.root)
            let context = StepContext(environment: environment, name: "train", input: train.input, manifest: manifest,
                                      ancestors: ["sample": sample], progress: progress, checkpointPointer: pointer)
            return try TrainBody.run(context)
        }
    }

    enum Condition: String, CaseIterable { case battery, heat, memory }

    @Test(arguments: Condition.allCases)
    func trainDefersWhenTheMachineMayNotTrain(_ condition: Condition) async throws {
        let sampled = try await Sampled.make()
        switch condition {
        case .battery: try sampled.device.set(onMains: false, battery: 12, celsius: 45, availableMB: 8192)
        case .heat: try sampled.device.set(onMains: true, battery: 90, celsius: 97, availableMB: 8192)
        case .memory: try sampled.device.set(onMains: true, battery: 90, celsius: 45, availableMB: 300)
        }
        let pointer = MemoryCheckpointPointer()
        guard case let .deferred(reason, after) = try await sampled.train(pointer: pointer) else {
            Issue.record("train ran although the \(condition) reading forbids it")
            return
        }
        let expected = ["battery": "on battery at 12%", "heat": "thermal zone thermal_zone0", "memory": "300 MiB of memory available"]
        #expect(reason.contains(expected[condition.rawValue]!), "\(reason)")
        #expect(after == 30 * 60_000)
        #expect(try pointer.read().isEmpty, "nothing was trained, so nothing was checkpointed")

        try sampled.device.set(onMains: true, battery: 90, celsius: 45, availableMB: 8192)
        guard case let .completed(output) = try await sampled.train(pointer: pointer) else {
            Issue.record("train was deferred although the readings cleared")
            return
        }
        #expect(output.result["steps"]?.intValue == 16)
    }

    @Test func trainYieldsAtACheckpointWhenItHeatsUpAndResumesBitIdentical() async throws {
        let sampled = try await Sampled.make()
        guard case let .completed(reference) = try await sampled.train(pointer: MemoryCheckpointPointer()) else {
            Issue.record("the undisturbed run did not complete")
            return
        }

        let pointer = MemoryCheckpointPointer()
        let device = sampled.device
        let first = try await sampled.train(pointer: pointer) { message in
            if message.hasPrefix("step 8/") { try? device.set(onMains: true, battery: 90, celsius: 99, availableMB: 8192) }
        }
        guard case let .deferred(reason, _) = first else {
            Issue.record("train did not yield when the zone got hot")
            return
        }
        #expect(reason.contains("after step 8"), "\(reason)")
        #expect(try pointer.read().map(\.step).max() == 8)

        try device.set(onMains: true, battery: 90, celsius: 45, availableMB: 8192)
        let messages = LockedBox<[String]>([])
        guard case let .completed(resumed) = try await sampled.train(pointer: pointer, progress: { m in messages.update { $0.append(m) } }) else {
            Issue.record("train did not resume when the zone cooled")
            return
        }
        #expect(messages.get().first?.hasPrefix("resumed from checkpoint") == true)
        #expect(resumed.timing["resumed_from_step"]?.intValue == 8)
        #expect(resumed.result["adapter_digest"] == reference.result["adapter_digest"])
        #expect(resumed.result["losses"] == reference.result["losses"])
    }

    @Test func theTrainWorkerDefersThroughTheJobEngineWithAnEventSayingWhy() async throws {
        let sampled = try await Sampled.make()
        try sampled.device.set(onMains: false, battery: 5, celsius: 45, availableMB: 8192)
        let environment = [StepEnvironment.deviceRootVariable: sampled.device.root.path]
        let worker = try Executables.start("adapt-train-worker", ["--state", sampled.fixture.statePath],
                                           environment: environment, outputIn: sampled.fixture.directory.url)
        let queue = try sampled.fixture.queue()
        let deadline = Date().addingTimeInterval(60)
        var deferral: EventRecord?
        while deferral == nil, Date() < deadline {
            deferral = try queue.events(job: sampled.train.id).first { $0.message?.hasPrefix("deferred: ") == true }
            if deferral == nil { try await Task.sleep(for: .seconds(0.05)) }
        }
        worker.send(SIGTERM)
        #expect(try await blocking { worker.wait() } == 0, "\(worker.stderr)")
        let event = try #require(deferral, "no deferral event: \(worker.stderr)")
        #expect(event.message?.contains("on battery at 5%") == true)
        let job = try queue.job(sampled.train.id)
        #expect(job.state == .ready)
        #expect(job.runAt >= event.at + 29 * 60_000, "deferred by the pipeline's 30 minutes")
        #expect(job.maxAttempts - job.attempt == sampled.train.maxAttempts, "a deferral uses up no attempt")

        // The wait is over and the charger is back: the step runs and the run completes.
        try queue.database.run("UPDATE jobs SET run_at = 0 WHERE id = ?", sampled.train.id)
        try sampled.device.set(onMains: true, battery: 40, celsius: 45, availableMB: 8192)
        try sampled.fixture.expectSuccess(await sampled.fixture.adapt(["work", "--exit-when-idle"], environment: environment))
        #expect(try queue.run(sampled.run).counts[.succeeded] == 5)
    }
}
