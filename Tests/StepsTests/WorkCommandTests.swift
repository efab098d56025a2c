import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt work` and the worker executables as processes: help, usage errors, signals.
@Suite(.serialized) struct WorkCommandTests {
    @Test(arguments: ["prune", "sample", "train", "eval", "promote"])
    func everyWorkerExecutableHasHelpAndRefusesUnknownOptions(kind: String) async throws {
        let help = try await blocking { try Executables.run("adapt-\(kind)-worker", ["--help"]) }
        #expect(help.status == 0)
        for option in ["--state", "--durability", "--exit-when-idle", "--lease-ms"] {
            #expect(help.stdout.contains(option), "adapt-\(kind)-worker --help does not mention \(option)")
        }
        let bad = try await blocking { try Executables.run("adapt-\(kind)-worker", ["--no-such-option"]) }
        #expect(bad.status == 2)
        #expect(bad.stdout.isEmpty)
    }

    @Test func anIdleWorkerExitsWhenAskedToOnAnEmptyQueue() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let state = fixture.statePath
        let result = try await blocking { try Executables.run("adapt-sample-worker", ["--state", state, "--exit-when-idle"]) }
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func workRefusesAnUnknownKind() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let result = try await fixture.adapt(["work", "--workers", "prune,bake"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("bake"))
    }

    @Test func sigtermStopsTheSupervisorAndEveryWorkerCleanly() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work"], outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(30)
        var workers: [Int32] = []
        while workers.count < 5, Date() < deadline {
            try await Task.sleep(for: .seconds(0.05))
            workers = ChaosTests.children(of: work.pid)
        }
        #expect(workers.count == 5, "\(work.stderr)")
        work.send(SIGTERM)
        #expect(try await blocking { work.wait() } == 0, "\(work.stderr)")
        for pid in workers { #expect(kill(pid, 0) != 0, "worker \(pid) outlived the supervisor") }
        #expect(!work.stderr.contains("restarting"), "a worker stopped on request was taken for a crash")
    }

    @Test func aWorkerThatDiesIsRestarted() async throws {
        let fixture = try await PipelineFixture.make(importData: false)
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work", "--workers", "prune"],
                                         outputIn: fixture.directory.url)
        let deadline = Date().addingTimeInterval(30)
        var first: [Int32] = []
        while first.isEmpty, Date() < deadline { try await Task.sleep(for: .seconds(0.05)); first = ChaosTests.children(of: work.pid) }
        let victim = try #require(first.first)
        kill(victim, SIGKILL)
        var replacement: [Int32] = []
        while (replacement.isEmpty || replacement == [victim]), Date() < deadline {
            try await Task.sleep(for: .seconds(0.05))
            replacement = ChaosTests.children(of: work.pid).filter { $0 != victim }
        }
        #expect(replacement.count == 1, "\(work.stderr)")
        work.send(SIGTERM)
        #expect(try await blocking { work.wait() } == 0)
        #expect(work.stderr.contains("exited (signal 9); restarting"))
    }
}
