import AdaptCore
import Foundation
import JobQueue
import Testing
import TestSupport

/// On PostgreSQL every host's `adapt work` sees a run end; the pipeline's notify command hears it once.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgresRunNotifyTests {
    @Test func aRunWorkedByTwoHostsIsAnnouncedByOneOfThemOnce() async throws {
        let directory = TemporaryDirectory("adapt-pg-notify")
        let heard = directory.file("heard.jsonl")
        let pipeline = directory.file("pipeline.json")
        try RunNotifyTests.pipeline(notifyingInto: heard).write(to: pipeline, atomically: true, encoding: .utf8)
        let (url, hosts) = try await PostgresNightlyTests.sharedDatabase(hosts: 2, in: directory)
        let run = try await PostgresNightlyTests.enqueue(on: url, host: hosts[0], pipeline: pipeline.path, night: "2026-11-30")
        // Both hosts run every kind, so either may finish the run and both see it end.
        let workers = try hosts.map { host in
            try Executables.start("adapt", ["--state", host, "--database", url, "work", "--json"], outputIn: directory.url)
        }
        let queue = try PostgresJobQueue(connectionString: url)
        try await PostgresNightlyTests.waitUntil("the run ended") { try queue.run(run).isFinished }
        try await PostgresNightlyTests.waitUntil("the notify command heard it") { FileManager.default.fileExists(atPath: heard.path) }
        // Two looks of each supervisor later, a second announcement would have been made.
        try await Task.sleep(for: .milliseconds(2_500))
        for worker in workers {
            worker.send(SIGTERM)
            #expect(try await blocking { worker.wait() } == 0, "\(worker.stderr)")
        }
        let told = try String(contentsOf: heard, encoding: .utf8).split(separator: "\n")
        #expect(told.count == 1, "\(told)")
        let outcome = try JSON.decode(JSONValue.self, from: String(try #require(told.first)), context: "notify stdin")
        #expect(outcome["run_id"]?.stringValue == run.description && outcome["state"]?.stringValue == "succeeded")
        #expect(outcome["version"]?.stringValue == "logbook/v1")
        // One host says so on stderr as a JSON line, and says whom it told; the other says nothing of it.
        let announcing = workers.filter { $0.stderr.contains(#""type":"run_ended""#) }
        #expect(announcing.count == 1, "\(workers.map(\.stderr))")
        #expect(announcing.first?.stderr.contains("\(run): told /bin/sh") == true)
    }

    @Test func anAnnouncementWhoseSupervisorIsKilledIsMadeByTheOtherHost() async throws {
        let directory = TemporaryDirectory("adapt-pg-notify-takeover")
        let heard = directory.file("heard.jsonl")
        let started = directory.file("started")
        // The first host to run the command is held in it, as a supervisor killed before its command is done would be.
        let script = directory.file("notify.sh")
        try """
        if mkdir '\(started.path)' 2>/dev/null; then exec sleep 20; fi
        cat >> '\(heard.path)'
        """.write(to: script, atomically: true, encoding: .utf8)
        let pipeline = directory.file("pipeline.json")
        try RunNotifyTests.pipeline(notify: ["/bin/sh", script.path]).write(to: pipeline, atomically: true, encoding: .utf8)
        let (url, hosts) = try await PostgresNightlyTests.sharedDatabase(hosts: 2, in: directory)
        let run = try await PostgresNightlyTests.enqueue(on: url, host: hosts[0], pipeline: pipeline.path, night: "2026-11-30")
        let workers = try hosts.map { host in
            try Executables.start("adapt", ["--state", host, "--database", url, "work", "--json"], outputIn: directory.url)
        }
        try await PostgresNightlyTests.waitUntil("a host ran the notify command") { FileManager.default.fileExists(atPath: started.path) }
        let first = try #require(workers.first { $0.stderr.contains(#""type":"run_ended""#) }, "\(workers.map(\.stderr))")
        let other = try #require(workers.first { $0 !== first })
        first.send(SIGKILL)
        _ = try await blocking { first.wait() }
        // The killed supervisor's session ends with it, and so does its hold on the announcement.
        try await PostgresNightlyTests.waitUntil("the other host announced the run") { FileManager.default.fileExists(atPath: heard.path) }
        other.send(SIGTERM)
        #expect(try await blocking { other.wait() } == 0, "\(other.stderr)")
        let told = try String(contentsOf: heard, encoding: .utf8).split(separator: "\n")
        #expect(told.count == 1, "\(told)")
        #expect(other.stderr.contains(#""type":"run_ended""#) && other.stderr.contains("\(run): told /bin/sh"), "\(other.stderr)")
        let queue = try PostgresJobQueue(connectionString: url)
        #expect(try queue.unfinishedAnnouncements().isEmpty)
    }
}

