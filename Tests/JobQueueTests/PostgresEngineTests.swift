import AdaptCore
import Foundation
import JobQueue
import Storage
import TestSupport
import Testing

/// What only the PostgreSQL backend has: many connections claiming at once, the idle wake through
/// LISTEN/NOTIFY, its migrations, the server's errors and a server restart under a held lease.
@Suite(.serialized) struct PostgresEngineTests {
    @Test func concurrentClaimsFromManyConnectionsNeverTakeOneJobTwice() throws {
        let fixture = try EngineFixture(.postgres)
        let jobs = 200
        try fixture.queue.enqueue(RunDescription(kind: "t", steps: (0..<jobs).map { .init(name: "s\($0)", kind: "test") }))
        let target = try #require(fixture.connectionString)
        let taken = LockedBox<[JobID]>([])
        let failures = LockedBox<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let engine = try PostgresJobQueue(connectionString: target, clock: fixture.clock)
                let request = ClaimRequest(kinds: ["test"], owner: "host-\(worker)", leaseMilliseconds: 60_000)
                var next = try engine.claim(request)
                while let claim = next {
                    taken.update { $0.append(claim.jobID) }
                    next = try engine.complete(claim, output: .int(worker), alsoInTransaction: nil, thenClaim: request)
                }
            } catch {
                failures.update { $0.append("\(error)") }
            }
        }
        #expect(failures.get().isEmpty, "\(failures.get())")
        #expect(taken.get().count == jobs && Set(taken.get()).count == jobs, "every job claimed exactly once")
        #expect(try fixture.count("SELECT count(*) FROM jobs WHERE state = 'succeeded' AND attempt = 1") == jobs)
        #expect(try fixture.count("SELECT count(*) FROM job_events") == 3 * jobs)
    }

    @Test func anIdleWorkerWakesWhenAJobOfItsKindBecomesClaimable() throws {
        let fixture = try EngineFixture(.postgres)
        let target = try #require(fixture.connectionString)
        let idle = try PostgresJobQueue(connectionString: target)
        try idle.startListening()
        #expect(try !idle.waitForWork(kinds: ["test"], timeoutMilliseconds: 50).notified, "nothing enqueued: the wait times out")
        try fixture.enqueue(["other"], kind: "other")
        #expect(try !idle.waitForWork(kinds: ["test"], timeoutMilliseconds: 100).notified, "another kind does not wake it")
        var wakes: [Double] = []
        for round in 0..<20 {
            let enqueuer = Thread {
                Thread.sleep(forTimeInterval: 0.02)
                _ = try? fixture.enqueue(["w\(round)"])
            }
            let start = DispatchTime.now().uptimeNanoseconds
            enqueuer.start()
            #expect(try idle.waitForWork(kinds: ["test"], timeoutMilliseconds: 5_000).notified)
            wakes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 - 20)
            #expect(try idle.claim(kinds: ["test"], owner: "idle", leaseMilliseconds: 60_000) != nil)
        }
        let sorted = wakes.sorted()
        let p50 = sorted[sorted.count / 2]
        print("LISTEN/NOTIFY wake after enqueue: p50 \(String(format: "%.2f", p50)) ms, max \(String(format: "%.2f", sorted.last!)) ms")
        #expect(p50 < 50, "woken within milliseconds of the commit, not by a poll")
    }

    @Test func aDependentBecomingReadyWakesTheIdleWorkerToo() throws {
        let fixture = try EngineFixture(.postgres)
        try fixture.queue.enqueue(RunDescription(kind: "t", steps: [
            .init(name: "a", kind: "first"), .init(name: "b", kind: "second", dependsOn: ["a"]),
        ]))
        let idle = try PostgresJobQueue(connectionString: try #require(fixture.connectionString))
        try idle.startListening()
        let first = try #require(try fixture.claim(["first"]))
        try fixture.queue.complete(first, output: .null)
        #expect(try idle.waitForWork(kinds: ["second"], timeoutMilliseconds: 5_000).notified)
    }

    @Test func migrationsAreRecordedAndANewerSchemaIsRefusedUntouched() throws {
        let fixture = try EngineFixture(.postgres)
        let target = try #require(fixture.connectionString)
        #expect(try fixture.count("SELECT version FROM adapt_schema WHERE component = 'jobqueue'") == PostgresJobSchema.schema.migrations.count)
        _ = try PostgresJobQueue(connectionString: target)  // a second open migrates nothing
        try fixture.run("UPDATE adapt_schema SET version = 99")
        let before = try fixture.snapshot()
        #expect(throws: StorageError.self) { try PostgresJobQueue(connectionString: target) }
        do { _ = try PostgresJobQueue(connectionString: target) } catch let error as StorageError {
            #expect(error.description.contains("newer adapt") && error.description.contains("jobqueue schema version 99"))
        }
        #expect(try fixture.snapshot() == before)
    }

    /// Version 10 moved the appending of events from row triggers to statement triggers: a run started before it
    /// carries on after it with every job's chain of events unbroken.
    @Test func aRunInFlightAcrossTheMoveToOneEventInsertPerStatementKeepsItsEventChains() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let old = try PostgresConnection(target)
        try old.migrate(Schema(component: "jobqueue", migrations: Array(PostgresJobSchema.schema.migrations.prefix(9))))
        let step = { (place: Int, name: String, state: String, waiting: Int) in
            "{\"place\":\(place),\"name\":\"\(name)\",\"kind\":\"test\",\"state\":\"\(state)\",\"priority\":0,\"run_at\":0,"
                + "\"max_attempts\":3,\"lease_ms\":null,\"input\":\"{}\",\"waiting_on\":\(waiting),\"note\":\"created\"}"
        }
        try old.execute("""
            SELECT * FROM adapt_enqueue('t', 'before', NULL, '{}', 0,
                '[\(step(0, "a", "ready", 0)), \(step(1, "b", "pending", 1))]', '[{"job":1,"parent":0}]')
            """)
        try old.execute("SELECT * FROM adapt_claim('old-host', 0, NULL, 60000, ARRAY['test'], 1)")

        let queue = try PostgresJobQueue(connectionString: target, clock: ManualClock(1_000))
        let held = Claim(jobID: JobID(1), runID: RunID(1), name: "a", kind: "test", input: .object([:]), token: 1,
                         maxAttempts: 3, owner: "old-host", leaseExpiresAt: 60_000, leaseMilliseconds: 60_000)
        let request = ClaimRequest(kinds: ["test"], owner: "old-host", leaseMilliseconds: 60_000)
        let impostor = Claim(jobID: JobID(1), runID: RunID(1), name: "a", kind: "test", input: .object([:]), token: 1,
                             maxAttempts: 3, owner: "another-host", leaseExpiresAt: 60_000, leaseMilliseconds: 60_000)
        #expect(throws: JobQueueError.leaseLost(JobID(1), token: 1), "a group commit names the lease's owner") {
            try queue.complete(impostor, output: .null, alsoInTransaction: nil, thenClaim: request)
        }
        let next = try #require(try queue.complete(held, output: .null, alsoInTransaction: nil, thenClaim: request))
        #expect(next.jobID == JobID(2))
        #expect(try queue.complete(next, output: .null, alsoInTransaction: nil, thenClaim: request) == nil)

        let events = try old.query("SELECT id, job_id, previous_id, to_state FROM job_events ORDER BY id")
        var last: [Int64: Int64] = [:]
        for event in events {
            let job = try #require(event.int64("job_id")), id = try #require(event.int64("id"))
            #expect(event.int64("previous_id") == last[job], "event \(id) continues job \(job)'s chain")
            last[job] = id
        }
        #expect(events.map { $0.string("to_state") ?? "" }.sorted()
                == ["pending", "ready", "ready", "running", "running", "succeeded", "succeeded"])
        for (job, id) in last {
            #expect(try old.scalar("SELECT last_event_id FROM jobs WHERE id = \(job)").integerValue == id)
        }
    }

    @Test func aDatabaseWithAnotherProgramsTablesIsRefused() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let other = try PostgresConnection(target)
        try other.execute("CREATE TABLE invoices (id int)")
        #expect(throws: StorageError.foreignDatabase(path: other.displayTarget, tables: ["invoices"])) {
            try PostgresJobQueue(connectionString: target)
        }
    }

    @Test func refusedStatementsCarryTheServersSQLSTATE() throws {
        let fixture = try EngineFixture(.postgres)
        try fixture.enqueue(["a"])
        do {
            try fixture.run("UPDATE jobs SET state = 'succeeded' WHERE id = 1")
            Issue.record("a ready job cannot succeed without running")
        } catch let error as StorageError {
            #expect(error.sqlstate == "23514" && error.isConstraintViolation)
            #expect(error.description.contains("job state transition not allowed"))
        }
    }

    @Test func passwordsNeverAppearInConnectionErrors() throws {
        let port = try PostgresCluster.shared().port
        for target in ["postgresql://adapt:s3cr3t-pw@127.0.0.1:\(port)/no_such_db?connect_timeout=5",
                       "host=127.0.0.1 port=\(port) dbname=no_such_db user=adapt password='s3cr3t-pw'"] {
            do {
                _ = try PostgresConnection(target)
                Issue.record("a database that does not exist cannot be connected to")
            } catch let error as StorageError {
                #expect(!error.description.contains("s3cr3t-pw"), "\(error)")
                #expect(error.description.contains("no_such_db") && error.description.contains("***"))
            }
        }
    }

    /// A server restart cuts every connection: the interrupted change is not committed, the lease survives in
    /// the database, and the worker, once reconnected, completes it under its token.
    @Test func aServerRestartLosesNothingAndTheLeaseHolderCompletesAfterReconnecting() throws {
        let cluster = try PostgresCluster()
        defer { try? cluster.stop() }
        let target = try cluster.makeDatabase()
        let clock = ManualClock()
        let engine = try PostgresJobQueue(connectionString: target, clock: clock)
        let run = try engine.enqueue(RunDescription(kind: "t", steps: [.init(name: "a", kind: "test")]))
        let claim = try #require(try engine.claim(kinds: ["test"], owner: "w", leaseMilliseconds: 60_000))
        try cluster.stopServer()
        #expect {
            try engine.complete(claim, output: .string("done"))
        } throws: { error in
            guard case StorageError.postgresConnectionLost = error else { return false }
            return true
        }
        try cluster.startServer()
        try engine.connection.reconnect()
        #expect(try engine.job(run.jobIDs[0]).state == .running, "the failed completion committed nothing")
        try engine.complete(claim, output: .string("done"))
        #expect(try engine.job(run.jobIDs[0]).output == .string("done"))
    }
}
