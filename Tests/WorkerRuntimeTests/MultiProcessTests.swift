import AdaptCore
import Foundation
import JobQueue
import Storage
import Testing
import TestSupport

/// Real `adapt worker` processes sharing one state directory, sent real signals (SIGKILL, SIGSTOP/SIGCONT,
/// SIGTERM). Serialized: each test wants the machine's cores to itself.
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(5)))) struct MultiProcessTests {
    let directory = TemporaryDirectory("adapt-mp")
    var state: String { directory.file("state").path }
    var databasePath: String { directory.file("state").appendingPathComponent("adapt.sqlite").path }

    @discardableResult
    func adapt(_ arguments: [String]) async throws -> ProcessResult {
        try await Executables.runAsync("adapt", ["--state", state, "--durability", "normal"] + arguments)
    }

    func worker(_ arguments: [String]) throws -> RunningProcess {
        try Executables.start("adapt", ["--state", state, "--durability", "normal", "worker", "--kinds", "noop"] + arguments,
                              outputIn: directory.url)
    }

    func database() throws -> Database { try Database(path: databasePath) }

    /// Creates and migrates the state's job tables in this process, so the processes a test starts race over the
    /// rows and not the schema (a worker needs the state directory to exist).
    func makeState() throws {
        try PrivateFiles.createDirectory(directory.file("state"))
        _ = try JobQueue(database: try Database(path: databasePath, durability: .normal))
    }

    func int(_ sql: String) throws -> Int { Int(try database().scalar(sql).integerValue ?? -1) }

    func summary(_ process: RunningProcess) throws -> JSONValue {
        try JSON.decode(JSONValue.self, from: process.stdout, context: "worker stdout")
    }

    /// Polls the database every 2 ms until `condition` holds.
    func waitUntil(_ what: String, timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + Slowdown.scaled(timeout)
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw Timeout(what: what) }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting until \(what)" }
    }

    func jobState(_ id: Int) throws -> String {
        try database().scalar("SELECT state FROM jobs WHERE id = ?", id) == .text("running") ? "running"
            : (try database().queryOne("SELECT state FROM jobs WHERE id = ?", id)?.string("state") ?? "?")
    }

    @Test func fourWorkerProcessesDrainTenThousandJobsEachSucceedingExactlyOnce() async throws {
        #expect(try await adapt(["enqueue", "noop", "--count", "10000"]).status == 0)
        let started = ContinuousClock.now
        let workers = try (0..<4).map { _ in try worker(["--exit-when-idle", "--json"]) }
        var statuses: [Int32] = []
        for process in workers { statuses.append(await process.exited()) }
        let elapsed = ContinuousClock.now - started
        #expect(statuses == [0, 0, 0, 0], "\(workers.map(\.stderr))")
        let claimed = try workers.map { try summary($0)["succeeded"]?.intValue ?? -1 }
        #expect(claimed.reduce(0, +) == 10_000, "per worker: \(claimed)")
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'succeeded' AND attempt = 1") == 10_000)
        #expect(try int("SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 10_000)
        #expect(try int("SELECT count(DISTINCT job_id) FROM job_events WHERE to_state = 'succeeded'") == 10_000)
        #expect(try int("SELECT count(*) FROM job_events WHERE to_state = 'running'") == 10_000)
        #expect(elapsed < Slowdown.scaled(.seconds(60)), "drained in \(elapsed)")
        print("4 workers drained 10,000 noop jobs in \(elapsed) (per worker: \(claimed))")
    }

    @Test func workersCommittingJobsInGroupsSurviveAKillAndEachJobSucceedsOnce() async throws {
        #expect(try await adapt(["enqueue", "noop", "--count", "3000", "--sleep-ms", "2"]).status == 0)
        let options = ["--exit-when-idle", "--json", "--concurrency", "8", "--lease-ms", "800"]
        let workers = try (0..<3).map { _ in try worker(options) }
        try await waitUntil("500 jobs succeeded") { try int("SELECT count(*) FROM jobs WHERE state = 'succeeded'") >= 500 }
        workers[0].send(SIGKILL)
        #expect(await workers[0].exited() == 128 + SIGKILL)
        for survivor in workers.dropFirst() { #expect(await survivor.exited() == 0, "\(survivor.stderr)") }
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'succeeded'") == 3000)
        #expect(try int("SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 3000, "each succeeded once")
        #expect(try int("SELECT count(DISTINCT job_id) FROM job_events WHERE to_state = 'succeeded'") == 3000)
        #expect(try int("SELECT count(*) FROM jobs WHERE attempt = 2") >= 1, "the killed worker's jobs were rescued")
        let survivors = try workers.dropFirst().map { try summary($0) }
        let succeeded = survivors.map { $0["succeeded"]?.intValue ?? 0 }.reduce(0, +)
        let commits = survivors.map { $0["commits"]?.intValue ?? 0 }.reduce(0, +)
        #expect(commits < succeeded / 2, "\(commits) commits for \(succeeded) jobs")
    }

    @Test func anEnqueuerKilledMidStreamLeavesEveryRunItCommittedWhole() async throws {
        try makeState()
        // One commit per run, as fast as they go: the kill lands between, or in the middle of, WAL writes.
        let enqueuer = try Executables.start("adapt", ["--state", state, "--durability", "normal", "enqueue", "noop",
                                                       "--count", "10000000", "--separate-runs"], outputIn: directory.url)
        try await waitUntil("300 runs are stored") { try int("SELECT count(*) FROM job_runs") >= 300 }
        enqueuer.send(SIGKILL)
        #expect(await enqueuer.exited() == 128 + SIGKILL)
        let runs = try int("SELECT count(*) FROM job_runs")
        #expect(try database().scalar("PRAGMA integrity_check") == .text("ok"))
        #expect(try int("SELECT max(id) FROM job_runs") == runs)
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'ready'") == runs, "one job per run")
        #expect(try int("SELECT count(*) FROM job_events WHERE to_state = 'ready'") == runs, "one event per job")
        #expect(try await adapt(["worker", "--kinds", "noop", "--exit-when-idle"]).status == 0)
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'succeeded'") == runs)
    }

    @Test func aWorkerKilledMidJobIsRescuedAfterItsLeaseAndTheJobSucceedsOnce() async throws {
        try await adapt(["enqueue", "noop", "--sleep-ms", "1500"])
        let doomed = try worker(["--lease-ms", "600"])
        try await waitUntil("job-1 runs") { try jobState(1) == "running" }
        doomed.send(SIGKILL)
        #expect(await doomed.exited() == 128 + SIGKILL)
        let killedAt = Date()
        let rescuer = try worker(["--lease-ms", "600", "--exit-when-idle", "--json"])
        #expect(await rescuer.exited() == 0, "\(rescuer.stderr)")
        let db = try database()
        let events = try db.query("SELECT from_state, to_state, attempt, at FROM job_events WHERE job_id = 1 ORDER BY id")
        let moves = events.map { "\($0.string("from_state") ?? "new")>\($0.string("to_state") ?? "")@\($0.int("attempt") ?? -1)" }
        #expect(moves == ["new>ready@0", "ready>running@1", "running>ready@1", "ready>running@2", "running>succeeded@2"])
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'succeeded' AND attempt = 2") == 1)
        // Running again within the lease plus a little: the dead worker's lease had at most 600 ms left, which no
        // sanitizer stretches; the rest is the rescuer starting and claiming.
        let rerun = Double(events[3].int64("at") ?? 0) / 1000 - killedAt.timeIntervalSince1970
        #expect(rerun < 0.6 + Slowdown.scaled(seconds: 0.9), "the job ran again \(rerun) s after the kill")
        print("a killed worker's job ran again \(rerun) s after the kill")
        #expect(try summary(rescuer)["succeeded"] == .int(1))
    }

    @Test func aWorkerPausedPastItsLeaseCanNoLongerWriteItsJob() async throws {
        try await adapt(["enqueue", "noop", "--sleep-ms", "1200"])
        let paused = try worker(["--lease-ms", "400", "--exit-when-idle", "--json"])
        try await waitUntil("job-1 runs") { try jobState(1) == "running" }
        paused.send(SIGSTOP)
        try await Task.sleep(for: .milliseconds(700))  // past the 400 ms lease
        let rescued = try await adapt(["rescue", "--json"])
        #expect(try JSON.decode(JSONValue.self, from: rescued.stdout, context: "rescue")
            == .array([.object(["job_id": .string("job-1"), "attempt": .int(1), "state": .string("ready")])]))
        let eventsBefore = try int("SELECT count(*) FROM job_events")
        paused.send(SIGCONT)
        #expect(await paused.exited() == 0, "\(paused.stderr)")
        // Attempt 1 wrote nothing after the rescue: no heartbeat-driven change, no completion, no failure.
        #expect(try int("SELECT count(*) FROM job_events WHERE attempt = 1 AND id > \(eventsBefore)") == 0)
        #expect(try int("SELECT count(*) FROM job_events WHERE to_state = 'succeeded'") == 1)
        #expect(try int("SELECT attempt FROM jobs WHERE id = 1 AND state = 'succeeded'") == 2)
        let summary = try summary(paused)
        #expect(summary["lease_lost"] == .int(1) && summary["succeeded"] == .int(1))
        #expect(paused.stderr.contains("lost the lease on job-1 (attempt 1)"))
    }

    @Test func sigtermLetsTheCurrentJobFinishAndClaimsNoMore() async throws {
        try await adapt(["enqueue", "noop", "--count", "3", "--sleep-ms", "700"])
        let process = try worker(["--json"])
        try await waitUntil("job-1 runs") { try jobState(1) == "running" }
        process.send(SIGTERM)
        #expect(await process.exited() == 0, "\(process.stderr)")
        #expect(try summary(process)["succeeded"] == .int(1))
        #expect(try int("SELECT count(*) FROM jobs WHERE state = 'ready'") == 2)
        #expect(try jobState(1) == "succeeded")
    }

    @Test func aSecondSignalReleasesTheRunningJobAtOnce() async throws {
        try await adapt(["enqueue", "noop", "--sleep-ms", "60000"])
        let process = try worker(["--json"])
        try await waitUntil("job-1 runs") { try jobState(1) == "running" }
        let signalled = ContinuousClock.now
        process.send(SIGINT)
        try await Task.sleep(for: .milliseconds(50))
        process.send(SIGINT)
        #expect(await process.exited() == 0, "\(process.stderr)")
        let released = ContinuousClock.now - signalled
        #expect(released < Slowdown.scaled(.seconds(5)), "released \(released) after the first signal")
        print("a second signal released the running job \(released) after the first")
        #expect(try summary(process)["released"] == .int(1))
        #expect(try jobState(1) == "ready")
        #expect(try int("SELECT count(*) FROM job_events WHERE from_state = 'running' AND to_state = 'ready'") == 1)
    }

    @Test func concurrentEnqueuersWithOneUniqueKeyMakeOneRun() async throws {
        try makeState()
        let processes = try (0..<6).map { _ in
            try Executables.start("adapt", ["--state", state, "enqueue", "noop", "--count", "5", "--unique-key", "night", "--json"],
                                  outputIn: directory.url)
        }
        var statuses: [Int32] = []
        for process in processes { statuses.append(await process.exited()) }
        #expect(statuses == Array(repeating: 0, count: 6))
        let results = try processes.map { try JSON.decode(JSONValue.self, from: $0.stdout, context: "enqueue") }
        #expect(Set(results.compactMap { $0["run_id"]?.stringValue }) == ["run-1"])
        #expect(results.filter { $0["existing"] == .bool(false) }.count == 1)
        #expect(try int("SELECT count(*) FROM job_runs") == 1 && int("SELECT count(*) FROM jobs") == 5)
    }

    @Test func anIdleWorkerBarelyUsesTheCPU() async throws {
        try makeState()
        let process = try worker([])
        try await Task.sleep(for: .milliseconds(500))
        let before = try cpuSeconds(process.pid)
        try await Task.sleep(for: .seconds(2))
        let used = try cpuSeconds(process.pid) - before
        process.send(SIGTERM)
        await process.exited()
        // Polling data_version every millisecond costs a few percent of one core at most. Not scaled under a
        // sanitizer (Slowdown): scaled, the bound would allow most of a core, which is no longer idle.
        #expect(used < 0.2, "an idle worker used \(used) s of CPU in 2 s")
        print("idle worker: \(used) s CPU in 2 s (\(used / 2 * 100) % of a core)")
    }

    /// User plus system CPU time of a process, from /proc/PID/stat (fields 14 and 15, in clock ticks).
    func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (Double(fields[11])! + Double(fields[12])!) / ticks
    }

    @Test func eventsFollowPrintsEventsAsTheyHappenAndEndsWithTheRun() async throws {
        try await adapt(["enqueue", "noop", "--count", "3", "--chain", "--sleep-ms", "100"])
        let follower = try Executables.start("adapt", ["--state", state, "events", "--run", "run-1", "--follow", "--json"],
                                             outputIn: directory.url)
        let process = try worker(["--exit-when-idle"])
        #expect(await process.exited() == 0)
        #expect(await follower.exited() == 0)
        let lines = follower.stdout.split(separator: "\n")
        #expect(lines.count == 11)
        let last = try JSON.decode(JSONValue.self, from: String(lines.last ?? ""), context: "follow")
        #expect(last["job_id"] == .string("job-3") && last["to"] == .string("succeeded"))
    }
}
