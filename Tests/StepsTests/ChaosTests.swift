import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// Chaos (issue 7): while `adapt work` runs a nightly run, random worker processes are killed with SIGKILL
/// again and again. The run still finishes with the adapter and gate report of an undisturbed run, no step
/// completes twice, and nothing is lost.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ChaosTests {
    static let pipeline = PipelineFixture.pipeline(steps: 300, checkpointInterval: 10, maxAttempts: 30)

    /// The pids whose parent is `parent` (read from /proc/<pid>/stat: field 4 is the parent's pid).
    static func children(of parent: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == parent
        }.sorted()
    }

    func finish(_ fixture: PipelineFixture, _ run: String) throws -> (adapter: JSONValue?, gate: JSONValue?) {
        let outputs = try fixture.outputs(run)
        return (outputs["train"]?["adapter_digest"], outputs["eval"]?["gate"])
    }

    @Test(arguments: [UInt64(11), 23])
    func runSurvivesWorkersKilledAgainAndAgain(seed: UInt64) async throws {
        let calm = try await PipelineFixture.make(pipeline: Self.pipeline)
        let calmRun = try await calm.enqueue()
        try calm.expectSuccess(await calm.adapt(["work", "--exit-when-idle"]))
        let expected = try finish(calm, calmRun)
        #expect(expected.adapter != nil && expected.gate != nil)

        let fixture = try await PipelineFixture.make(pipeline: Self.pipeline)
        let run = try await fixture.enqueue()
        let supervisor = try Executables.start("adapt", ["--state", fixture.statePath, "work", "--exit-when-idle", "--lease-ms", "1000"],
                                               outputIn: fixture.directory.url)
        let rng = CounterRNG(seed: seed)
        let queue = try fixture.queue()
        var kills = 0
        let deadline = Date().addingTimeInterval(180)
        try await Task.sleep(for: .seconds(0.3))
        // At least 10 kills, and until the train step has been killed after a checkpoint and resumed from it
        // (at most 30 kills: each costs its step one of its 30 attempts).
        var trainResumed = false
        while supervisor.isRunning, kills < 30, kills < 10 || !trainResumed, Date() < deadline {
            let running = try queue.jobs(matching: .init(state: .running))
            let busy = running.compactMap { $0.leaseOwner?.split(separator: "/").last.flatMap { Int32($0) } }
            let workers = Self.children(of: supervisor.pid)
            var pool = !busy.isEmpty && rng.uniform(.test, step: UInt64(kills), index: 2) < 0.7 ? busy.filter(workers.contains) : workers
            if let train = try queue.jobs(matching: .init(run: RunID.parse(run), kind: "train")).first {
                let events = try queue.events(job: train.id)
                trainResumed = train.state == .succeeded || events.contains { $0.message?.hasPrefix("resumed from checkpoint") == true }
                let checkpointed = try queue.checkpointPointer(job: train.id) != nil
                // Once the train step has a checkpoint and has not resumed yet, its worker is the one to kill.
                // Before that, after a few kills it is spared: a dead worker's step is handed back at once, so
                // random kills could otherwise use up the budget before the first checkpoint.
                if train.state == .running, let pid = train.leaseOwner?.split(separator: "/").last.flatMap({ Int32($0) }) {
                    if checkpointed, !trainResumed, workers.contains(pid) {
                        pool = [pid]
                    } else if !checkpointed, train.attempt >= 3 {
                        pool.removeAll { $0 == pid }
                    }
                }
            }
            if !pool.isEmpty {
                let victim = pool[Int(rng.below(UInt64(pool.count), .test, step: UInt64(kills), index: 0))]
                kill(victim, SIGKILL)
                kills += 1
            }
            try await Task.sleep(for: .seconds(0.15 + 0.35 * rng.uniform(.test, step: UInt64(kills), index: 1)))
        }
        while supervisor.isRunning, Date() < deadline { try await Task.sleep(for: .seconds(0.1)) }
        if supervisor.isRunning { supervisor.send(SIGKILL) }
        #expect(try await blocking { supervisor.wait() } == 0, "\(supervisor.stderr)")
        #expect(kills >= 3, "the run finished before the chaos got going (\(kills) kills)")
        #expect(supervisor.stderr.contains("restarting"), "no killed worker was restarted")

        // Nothing lost: every step succeeded; no step completed twice.
        let runID = try #require(RunID.parse(run))
        #expect(try queue.run(runID).counts[.succeeded] == 5)
        for job in try queue.jobs(matching: .init(run: runID)) {
            let completions = try queue.events(job: job.id).filter { $0.to == .succeeded }.count
            #expect(completions == 1, "\(job.name) completed \(completions) times")
        }
        let train = try #require(try queue.jobs(matching: .init(run: runID)).first { $0.kind == "train" })
        let resumed = try queue.events(job: train.id).contains { $0.message?.hasPrefix("resumed from checkpoint") == true }
        #expect(train.attempt >= 2 && resumed, "the train step was never killed and resumed (attempt \(train.attempt))")
        // Same numbers as the undisturbed run.
        let actual = try finish(fixture, run)
        #expect(actual.adapter == expected.adapter)
        #expect(actual.gate == expected.gate)
        let list = try await fixture.adapt(["registry", "list", "--json"])
        #expect(try JSON.decode(JSONValue.self, from: list.stdout, context: "registry list").arrayValue?.count == 1)
    }
}
