import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt work` and `adapt runs --watch` while a real run trains: step N/M, the loss raw and smoothed, tokens per
/// second and time left, as bars on a terminal and as JSON lines with --json.
@Suite(.serialized, .timeLimit(.minutes(Slowdown.minutes(5)))) struct LiveProgressTests {
    func lines(_ text: String) -> [JSONValue] {
        text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return try? JSON.decode(JSONValue.self, from: String(line), context: "line")
        }
    }

    /// On PostgreSQL the progress is read from the server's job events, which the train worker writes wherever it runs.
    @Test(arguments: Backend.allCases)
    func workWithJSONReportsTrainingProgressAsJSONLinesAndKeepsOneDocumentOnStdout(_ backend: Backend) async throws {
        let night = try await BackendNight.make(backend)
        let run = try await night.enqueue()
        let result = try await night.adapt(["work", "--exit-when-idle", "--json"])
        try night.fixture.expectSuccess(result)
        // stdout: the supervisor's summary, one document.
        #expect(try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout").objectValue != nil)
        let progress = lines(result.stderr).filter { $0["type"]?.stringValue == "progress" }
        let training = progress.flatMap { $0["running"]?.arrayValue ?? [] }.filter { $0["kind"]?.stringValue == "train" && $0["step"] != .null }
        #expect(!training.isEmpty, "\(result.stderr)")
        for entry in training {
            #expect(entry["run_id"]?.stringValue == run)
            #expect(entry["total_steps"]?.intValue == 16)
            #expect((entry["step"]?.intValue ?? 0) >= 1 && (entry["step"]?.intValue ?? 99) <= 16)
            #expect(entry["loss"]?.doubleValue != nil && entry["smoothed_loss"]?.doubleValue != nil)
            #expect((entry["tokens_per_second"]?.doubleValue ?? 0) > 0)
            #expect(entry["eta_seconds"] != nil)
        }
        // The steps shown only move forward within an attempt.
        let steps = training.compactMap { $0["step"]?.intValue }
        #expect(steps == steps.sorted())
        // The run's end is announced on either backend.
        let ended = lines(result.stderr).filter { $0["type"]?.stringValue == "run_ended" }
        #expect(ended.count == 1)
        #expect(ended.first?["outcome"]?["run_id"]?.stringValue == run)
    }

    @Test func workDrawsBarsOnATerminalAndNothingNewWhenPiped() async throws {
        let fixture = try await PipelineFixture.make()
        _ = try await fixture.enqueue()
        // script(1) gives adapt a terminal for stdout (and stderr); what it drew comes back on script's stdout.
        let adapt = Executables.url("adapt").path
        let command = "'\(adapt)' --state '\(fixture.statePath)' work --exit-when-idle"
        let result = try await blocking {
            try Executables.run(executableAt: URL(fileURLWithPath: "/usr/bin/script"), ["-qefc", command, "/dev/null"],
                                environment: ["COLUMNS": "100"])
        }
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("train job-3  ["), "\(result.stdout)")
        #expect(result.stdout.contains("/16  loss "))
        #expect(result.stdout.contains(" tok/s"))
        #expect(result.stdout.contains("\u{1B}[J"), "the bars are not redrawn in place")
        #expect(result.stdout.contains("run ended: run-1"))

        let second = try await PipelineFixture.make()
        _ = try await second.enqueue()
        let piped = try await second.adapt(["work", "--exit-when-idle"])
        try second.expectSuccess(piped)
        #expect(!piped.stderr.contains("/16  loss"), "bars were drawn without a terminal: \(piped.stderr)")
        #expect(!piped.stderr.contains("\u{1B}["))
    }

    @Test(arguments: Backend.allCases)
    func runsWatchRefreshesUntilTheRunFinishes(_ backend: Backend) async throws {
        let night = try await BackendNight.make(backend)
        let fixture = night.fixture
        let run = try await night.enqueue()
        let watch = try Executables.start("adapt", night.global + ["runs", "--watch", "--json"], outputIn: fixture.directory.url)
        try fixture.expectSuccess(await night.adapt(["work", "--exit-when-idle"]))
        #expect(await watch.exited() == 0, "\(watch.stderr)")
        let shown = lines(watch.stdout)
        #expect(shown.count >= 2, "\(watch.stdout)")
        let states = shown.compactMap { $0["runs"]?.arrayValue?.first { $0["id"]?.stringValue == run }?["state"]?.stringValue }
        #expect(states.first == "active")
        #expect(states.last == "succeeded")
        #expect(shown.contains { ($0["running"]?.arrayValue ?? []).contains { $0["kind"]?.stringValue == "train" } })

        // Nothing left to wait for: one listing, and the watch ends.
        let done = try await night.adapt(["runs", "--watch"])
        try fixture.expectSuccess(done)
        #expect(done.stdout.contains(run) && done.stdout.contains("succeeded"))
    }
}
