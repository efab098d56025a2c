import AdaptCore
import Foundation
import Testing
import TestSupport

/// `run export`, `replay` and `report` on a night that ran on PostgreSQL: the same answers as for the same night on
/// SQLite, read from the database's job tables, registry and blobs, with nothing but the model in the host directory.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PostgresRunCommandsTests {
    /// Both nights, each run to its end by `adapt work`.
    static func nights() async throws -> (sqlite: BackendNight, sqliteRun: String, postgres: BackendNight, postgresRun: String) {
        var ran: [(BackendNight, String)] = []
        for backend in Backend.allCases {
            let night = try await BackendNight.make(backend)
            let run = try await night.enqueue()
            try night.fixture.expectSuccess(await night.adapt(["work", "--exit-when-idle"]))
            ran.append((night, run))
        }
        return (ran[0].0, ran[0].1, ran[1].0, ran[1].1)
    }

    /// `document` without the fields that say when or where, which two nights cannot share.
    static func withoutTimes(_ document: JSONValue) -> JSONValue {
        switch document {
        case let .object(fields):
            let dropped: Set<String> = ["seconds", "out", "bytes", "generated_at", "created_at", "updated_at", "at", "cancelled_at",
                                        "attempts", "pointer_moves"]
            return .object(fields.filter { !dropped.contains($0.key) }.mapValues(withoutTimes))
        case let .array(items):
            return .array(items.map(withoutTimes))
        default:
            return document
        }
    }

    @Test func exportReplayAndReportOfANightOnPostgresEqualTheSameNightOnSQLite() async throws {
        let (sqlite, sqliteRun, postgres, postgresRun) = try await Self.nights()
        let out = TemporaryDirectory("adapt-pg-bundles")

        // run export: the same steps and blobs, the blobs read from the database's blob table.
        let sqliteBundle = out.file("sqlite.bundle").path, postgresBundle = out.file("postgres.bundle").path
        let exported = try await sqlite.json(["run", "export", sqliteRun, "--out", sqliteBundle, "--include-user-data", "--json"])
        let exportedThere = try await postgres.json(["run", "export", postgresRun, "--out", postgresBundle, "--include-user-data", "--json"])
        #expect(exportedThere["steps"] == .int(5) && exportedThere["blobs"] != .int(0), "\(exportedThere)")
        #expect(Self.withoutTimes(exportedThere) == Self.withoutTimes(exported))

        // replay --check on the database's run: every digest equal, the same steps as the SQLite run's replay.
        let replayed = try await sqlite.json(["replay", sqliteRun, "--check", "--json"])
        let replayedThere = try await postgres.json(["replay", postgresRun, "--check", "--json"])
        #expect(replayedThere["equal"] == .bool(true) && replayedThere["first_difference"] == .null, "\(replayedThere)")
        #expect(Self.withoutTimes(replayedThere) == Self.withoutTimes(replayed))
        // Nothing of the run reached the host directory but the scratch, removed after.
        let host = try #require(postgres.postgres?.host.state)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: host.root.appendingPathComponent("blobs").path)) ?? []).isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: host.root.appendingPathComponent("scratch").path)) ?? []).isEmpty)

        // Both bundles replay equal from this host, and their recorded digests are the same night's.
        for bundle in [sqliteBundle, postgresBundle] {
            let fromBundle = try await postgres.json(["replay", "--bundle", bundle, "--model", host.models.appendingPathComponent("tiny.gguf").path,
                                                      "--check", "--json"])
            #expect(fromBundle["equal"] == .bool(true), "\(bundle): \(fromBundle)")
            #expect(fromBundle["steps"].map(Self.withoutTimes) == replayed["steps"].map(Self.withoutTimes))
        }

        // report --json: the same gate, losses, jobs and versions.
        let report = try await sqlite.json(["report", sqliteRun, "--json"])
        let reportThere = try await postgres.json(["report", postgresRun, "--json"])
        #expect(reportThere["gate"] != nil && reportThere["gate"] != .null, "\(reportThere)")
        let losses = reportThere["losses"]?.arrayValue ?? []
        #expect(!losses.isEmpty)
        #expect(Self.withoutTimes(reportThere) == Self.withoutTimes(report))
        let lineage = try await sqlite.json(["report", "--lineage", "logbook", "--json"])
        let lineageThere = try await postgres.json(["report", "--lineage", "logbook", "--json"])
        #expect(lineageThere["nights"]?.arrayValue?.count == 1)
        #expect(Self.withoutTimes(lineageThere) == Self.withoutTimes(lineage))
        // The page is drawn from the same data.
        let page = try await postgres.adapt(["report", postgresRun])
        #expect(page.status == 0 && page.stdout.hasPrefix("<!DOCTYPE html>"), "\(page.stderr)")
    }

    @Test func aRunWhoseSnapshotWasErasedOnPostgresSaysSoWhenShownAndCannotBeReplayed() async throws {
        let night = try await BackendNight.make(.postgres)
        let run = try await night.enqueue()
        try night.fixture.expectSuccess(await night.adapt(["work", "--exit-when-idle"]))
        let id = try #require(try await night.json(["data", "list", "--lineage", "logbook", "--json"]).arrayValue?.first?["id"]?.stringValue)
        try night.fixture.expectSuccess(await night.adapt(["data", "forget", "--id", id]))

        let shown = try await night.json(["show", run, "--json"])
        let erased = try #require(shown["erased_inputs"]?.arrayValue, "\(shown)")
        #expect(erased.contains { $0["field"]?.stringValue == "inputs.buffer_snapshot" && $0["reason"]?.stringValue == "forget" })
        let replay = try await night.adapt(["replay", run, "--check", "--json"])
        #expect(replay.status == 2 && replay.stderr.contains("erased"), "\(replay.stderr)")
        let document = try JSON.decode(JSONValue.self, from: replay.stdout, context: "replay")
        #expect(document["replayable"] == .bool(false) && !(document["erased_inputs"]?.arrayValue ?? []).isEmpty, "\(document)")
        let exported = try await night.adapt(["run", "export", run, "--out", night.fixture.directory.file("x.bundle").path, "--include-user-data"])
        #expect(exported.status == 1 && exported.stderr.contains("erased"), "\(exported.stderr)")
    }

    @Test func anUnknownRunOnPostgresIsRefusedByReplayExportAndReport() async throws {
        let night = try await BackendNight.make(.postgres)
        let refused = try await night.adapt(["replay", "run-9", "--check"])
        #expect(refused.status == 1 && refused.stderr.contains("run-9"), "\(refused.stderr)")
        let exported = try await night.adapt(["run", "export", "run-9", "--out", night.fixture.directory.file("x.bundle").path])
        #expect(exported.status == 1 && exported.stderr.contains("run-9"), "\(exported.stderr)")
        let report = try await night.adapt(["report"])
        #expect(report.status == 1 && report.stderr.contains("no run yet"), "\(report.stderr)")
    }
}
