import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// `adapt work` under whole-system faults, with real processes and real signals: the supervisor killed, a
/// second supervisor, a worker killed mid-step, a run scheduled for later.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SupervisorFaultTests {
    /// Waits until `supervisor` has `count` workers; returns their pids.
    func workers(of supervisor: RunningProcess, count: Int = 5) async throws -> [Int32] {
        let deadline = Date().addingTimeInterval(30)
        var found: [Int32] = []
        while found.count < count, Date() < deadline {
            try await Task.sleep(for: .seconds(0.05))
            found = ChaosTests.children(of: supervisor.pid)
        }
        #expect(found.count == count, "\(supervisor.stderr)")
        return found
    }

    /// Seconds until none of `pids` is alive (nil if some still are after `limit`).
    func secondsUntilGone(_ pids: [Int32], limit: Double) async throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < limit {
            if pids.allSatisfy({ kill($0, 0) != 0 }) { return Date().timeIntervalSince(start) }
            try await Task.sleep(for: .seconds(0.02))
        }
        return nil
    }

    @Test func workersDieWithASupervisorKilledBySIGKILL() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        let pids = try await workers(of: work)
        work.send(SIGKILL)
        _ = await work.exited()
        let gone = try await secondsUntilGone(pids, limit: 10)
        #expect(gone != nil, "workers \(pids.filter { kill($0, 0) == 0 }) outlived their supervisor by 10 s")
        print("workers gone \(String(format: "%.2f", gone ?? -1)) s after their supervisor's SIGKILL")
    }

    @Test func aSecondSupervisorOnTheSameStateIsRefusedUntilTheFirstIsGone() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let first = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        let pids = try await workers(of: first)
        let second = try await fixture.adapt(["work", "--exit-when-idle"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("another adapt work (pid \(first.pid)) already runs the workers of this state directory"),
                "\(second.stderr)")
        #expect(!second.stderr.contains("started"), "the refused supervisor started workers: \(second.stderr)")
        #expect(ChaosTests.children(of: first.pid).count == 5)

        first.send(SIGKILL)
        _ = await first.exited()
        #expect(try await secondsUntilGone(pids, limit: 10) != nil)
        let after = try await fixture.adapt(["work", "--exit-when-idle"])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(after.stderr.contains("no work left"))
    }

    /// The pid and lease owner of the worker running `run`'s train step (once it reported progress, when
    /// `afterProgress`), or nil when none did within two minutes.
    static func runningTrainWorker(_ queue: JobQueue, run: RunID, afterProgress: Bool) async throws -> (pid: Int32, owner: String)? {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            try await Task.sleep(for: .seconds(0.05))
            guard let job = try queue.jobs(matching: .init(run: run, kind: "train")).first, job.state == .running,
                  let owner = job.leaseOwner,
                  try !afterProgress || queue.events(job: job.id).contains(where: { $0.from == .running && $0.to == .running }),
                  let pid = owner.split(separator: "/").last.flatMap({ Int32($0) }) else { continue }
            return (pid, owner)
        }
        return nil
    }

    @Test func aTrainStepWhoseWorkerIsKilledRunsAgainWellWithinItsLease() async throws {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 400, checkpointInterval: 50))
        let run = try await fixture.enqueue()
        let runID = try #require(RunID.parse(run))
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        defer { work.send(SIGKILL) }
        let queue = try fixture.queue()
        func train() throws -> JobRecord? { try queue.jobs(matching: .init(run: runID, kind: "train")).first }
        // Mid-step: running, with its first progress reported.
        let victim = try await Self.runningTrainWorker(queue, run: runID, afterProgress: true)
        let (pid, owner) = try #require(victim, "the train step never ran: \(work.stderr)")
        let killedAt = Date()
        kill(pid, SIGKILL)
        var resumedAfter: Double?
        let deadline = Date().addingTimeInterval(30)
        while resumedAfter == nil, Date() < deadline {
            if let job = try train(), job.state == .running, job.attempt == 2, job.leaseOwner != owner {
                resumedAfter = Date().timeIntervalSince(killedAt)
            } else {
                try await Task.sleep(for: .seconds(0.01))
            }
        }
        let seconds = try #require(resumedAfter, "the killed train step did not run again within 30 s: \(work.stderr)")
        print("train step running again \(String(format: "%.3f", seconds)) s after its worker's SIGKILL")
        // The lease is two minutes; waiting it out is what this replaces.
        #expect(seconds < 3, "took \(seconds) s")
        let job = try #require(try train())
        #expect(job.attempt == 2)
        let events = try queue.events(job: job.id)
        let died = events.first { $0.message?.contains("died (pid \(pid) killed by signal 9)") == true }
        #expect(died?.to == .ready, "no event says the worker died: \(events.compactMap(\.message))")
        #expect(work.stderr.contains("of the dead train worker is ready again (attempt 1 counted)"), "\(work.stderr)")
        work.send(SIGTERM)
        work.send(SIGTERM)
        #expect(await work.exited() == 0, "\(work.stderr)")
    }

    @Test func exitWhenIdleDoesNotWaitForARunScheduledForLater() async throws {
        let fixture = try await PipelineFixture.make()
        let run = try await fixture.enqueue(extra: ["--at", "2099-01-01T00:00:00Z"])
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work", "--exit-when-idle"],
                                         outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(60)
        while work.isRunning, Date() < deadline { try await Task.sleep(for: .seconds(0.05)) }
        #expect(!work.isRunning, "adapt work --exit-when-idle still waits for a run of 2099")
        if work.isRunning { work.send(SIGKILL) }
        #expect(await work.exited() == 0, "\(work.stderr)")
        #expect(work.stderr.contains("no work ready or running; 1 step scheduled for later (earliest 2099-01-01T00:00:00.000Z"),
                "\(work.stderr)")
        #expect(work.stderr.contains("4 pending steps waiting on steps scheduled for later"), "\(work.stderr)")
        let runID: RunID = try #require(RunID.parse(run))
        let jobs = try fixture.queue().jobs(matching: .init(run: runID))
        #expect(jobs.map(\.state).sorted { $0.rawValue < $1.rawValue } == [.pending, .pending, .pending, .pending, .ready])
    }
}

extension SupervisorFaultTests {
    @Test func aNewSupervisorTakesBackTheStepOfAWorkerKilledWithThePreviousOne() async throws {
        let fixture = try await PipelineFixture.make(pipeline: PipelineFixture.pipeline(steps: 400, checkpointInterval: 50))
        let run = try await fixture.enqueue()
        let runID = try #require(RunID.parse(run))
        let first = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        let queue = try fixture.queue()
        func train() throws -> JobRecord? { try queue.jobs(matching: .init(run: runID, kind: "train")).first }
        let victim = try await Self.runningTrainWorker(queue, run: runID, afterProgress: false)
        let (pid, owner) = try #require(victim, "the train step never ran: \(first.stderr)")
        let workers = ChaosTests.children(of: first.pid)
        // The whole group at once, as `kill -9 -PGID` would: no worker gets to release anything.
        first.send(SIGKILL)
        for worker in workers { kill(worker, SIGKILL) }
        _ = await first.exited()
        #expect(try await secondsUntilGone(workers, limit: 10) != nil)
        #expect(try train()?.state == .running && train()?.leaseOwner == owner, "the step is still leased to the dead worker")

        let second = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        defer { second.send(SIGKILL) }
        let started = Date()
        var resumedAfter: Double?
        let deadline = Date().addingTimeInterval(30)
        while resumedAfter == nil, Date() < deadline {
            if let job = try train(), job.state == .running, job.attempt == 2 {
                resumedAfter = Date().timeIntervalSince(started)
            } else {
                try await Task.sleep(for: .seconds(0.02))
            }
        }
        let seconds = try #require(resumedAfter, "the step waits for its two-minute lease: \(second.stderr)")
        print("orphaned train step running again \(String(format: "%.3f", seconds)) s after the new supervisor started")
        let events = try queue.events(job: try #require(try train()).id)
        #expect(events.contains { $0.message?.contains("died (pid \(pid) gone with its supervisor)") == true },
                "\(events.compactMap(\.message))")
        second.send(SIGTERM)
        second.send(SIGTERM)
        #expect(await second.exited() == 0, "\(second.stderr)")
    }
}
