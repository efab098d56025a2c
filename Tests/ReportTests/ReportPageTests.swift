import AdaptCore
import Foundation
import Testing
import TestSupport

/// Reports of real runs, rendered by headless Chromium: the page draws one bar per claim the event table holds, one
/// point per loss the train step stored, one pair per held-out example the eval step scored; it is not blank and is
/// no wider than a phone.
@Suite(.serialized) struct ReportPageTests {
    /// What every rendered report must be at 390 CSS pixels: laid out without overflow, and drawn.
    func expectRendered(_ page: URL, chromium: HeadlessChromium, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let widths = try chromium.layoutWidths(page, width: 390)
        #expect(widths.maxRight <= 390, "something reaches \(widths.maxRight) px on a 390 px screen", sourceLocation: sourceLocation)
        #expect(widths.scroll <= 390, "the body scrolls to \(widths.scroll) px on a 390 px screen", sourceLocation: sourceLocation)
        let shot = try ScreenshotStatistics.of(try chromium.screenshot(page, width: 390, height: 1400))
        #expect(shot.width == 390, sourceLocation: sourceLocation)
        #expect(shot.inked > 0.01, "the screenshot is blank (\(shot.inked) inked)", sourceLocation: sourceLocation)
        #expect(shot.colours > 8, sourceLocation: sourceLocation)
        #expect(shot.rightEdgeInk == 0, "something touches the right edge at phone width", sourceLocation: sourceLocation)
    }

    @Test func firstNightWithoutIncumbentDrawsEveryAttemptLossAndPair() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        let run = try await fixture.enqueue(night: "2026-11-30")
        try await fixture.work()
        let (data, page) = try await fixture.report([run])
        let dom = try chromium.dom(page)

        let claims = try await fixture.claims(run)
        #expect(claims >= 5)
        #expect(DOMCount.elements(dom, classPrefix: "bar ") == claims)
        #expect(data["jobs"]?.arrayValue?.reduce(0) { $0 + ($1["attempts"]?.arrayValue?.count ?? 0) } == claims)

        let train = try #require(try await fixture.output(run, step: "train"))
        let losses = try #require(train["losses"]?.arrayValue)
        #expect(losses.count == 16)
        #expect(DOMCount.polylinePoints(dom, class: "loss-raw") == losses.count)
        #expect(DOMCount.polylinePoints(dom, class: "loss-smoothed") == losses.count)
        #expect(data["losses"] == .array(losses))
        #expect(data["training"]?["source"]?.stringValue == "output")
        #expect(data["training"]?["steps"]?.arrayValue?.count == losses.count)
        #expect(DOMCount.elements(dom, classPrefix: "checkpoint") == data["training"]?["checkpoints"]?.arrayValue?.count)
        #expect(data["training"]?["checkpoints"]?.arrayValue?.count == 4)

        let eval = try #require(try await fixture.output(run, step: "eval"))
        let scores = try #require(eval["candidate_scores"]?.arrayValue)
        #expect(!scores.isEmpty)
        #expect(DOMCount.elements(dom, classPrefix: "pair ") == scores.count)
        #expect(DOMCount.elements(dom, classPrefix: "pair-point") == 2 * scores.count)
        // The first night of a lineage is compared with the base model, and the page says so in words.
        #expect(data["gate"]?["compared_with"]?.stringValue == "base")
        #expect(dom.contains("the base model (no adapter was active yet)"))
        #expect(dom.contains("Wilcoxon signed-rank test"))
        #expect(data["gate"]?["p_value"] == eval["gate"]?["p_value"])
        #expect(data["versions"]?.arrayValue?.count == 1)
        #expect(DOMCount.elements(dom, classPrefix: "version\"") == 1)
        // Self-contained: no script, no fetched resource.
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://") && !html.contains("@import"))
        try expectRendered(page, chromium: chromium)
    }

    @Test func reportHoldsExampleTextOnlyWhenAsked() async throws {
        let fixture = try await ReportFixture.make()
        let run = try await fixture.enqueue(night: "2026-11-30")
        try await fixture.work()
        let heldOut = try String(contentsOf: ReportFixture.root.appendingPathComponent("pipelines/examples/logbook/held_out.jsonl"), encoding: .utf8)
        let completions = try heldOut.split(separator: "\n").compactMap {
            try JSON.decode(JSONValue.self, from: String($0), context: "line")["completion"]?.stringValue
        }
        let (plain, plainPage) = try await fixture.report([run])
        let plainHTML = try String(contentsOf: plainPage, encoding: .utf8)
        #expect(plain["includes_text"] == .bool(false))
        #expect(!completions.contains { plainHTML.contains($0.prefix(30)) })
        #expect(!completions.contains { JSON.canonicalString(plain).contains($0.prefix(30)) })

        let (texted, textPage) = try await fixture.report([run, "--include-text"])
        let textHTML = try String(contentsOf: textPage, encoding: .utf8)
        #expect(texted["includes_text"] == .bool(true))
        #expect(texted["gate"]?["examples"]?.arrayValue?.allSatisfy { $0["prompt"]?.stringValue != nil } == true)
        #expect(textHTML.contains("This report holds example text"))
        let attributes = try FileManager.default.attributesOfItem(atPath: textPage.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func failedRunMarksTheDiscardedAttemptWithItsReason() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        let run = try await fixture.enqueue(night: "2026-11-30", pipeline: ReportFixture.pipeline(maxAttempts: 1))
        try await fixture.work("prune,sample")
        // The model the run was planned with is gone: the train step fails and, with one attempt, is discarded.
        try FileManager.default.removeItem(at: fixture.directory.state.models.appendingPathComponent("tiny.gguf"))
        try await fixture.work()
        let (data, page) = try await fixture.report([run])
        #expect(data["runs"]?.arrayValue?.first?["state"]?.stringValue == "failed")
        let dom = try chromium.dom(page)
        #expect(DOMCount.elements(dom, classPrefix: "bar ") == (try await fixture.claims(run)))
        #expect(DOMCount.elements(dom, classPrefix: "bar end-discarded") == 1)
        #expect(DOMCount.elements(dom, classPrefix: "end end-discarded") == 1)
        #expect(data["gate"] == .null && data["losses"] == .array([]) && data["training"] == .null)
        #expect(dom.contains("The eval step has not finished"))
        try expectRendered(page, chromium: chromium)
    }

    @Test func cancelledRunShowsOnlyTheAttemptsThatRan() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        let run = try await fixture.enqueue(night: "2026-11-30")
        try await fixture.work("prune,sample")
        try fixture.expectSuccess(await fixture.adapt(["cancel", run]))
        let (data, page) = try await fixture.report([run])
        #expect(data["runs"]?.arrayValue?.first?["state"]?.stringValue == "cancelled")
        let dom = try chromium.dom(page)
        #expect(DOMCount.elements(dom, classPrefix: "bar ") == 2)
        #expect(DOMCount.elements(dom, classPrefix: "bar ") == (try await fixture.claims(run)))
        #expect(dom.contains("cancelled at"))
        #expect(dom.contains("train · cancelled"))
        try expectRendered(page, chromium: chromium)
    }

    @Test func resumedTrainingIsMarkedOnTheTimelineAndTheLossCurve() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        let run = try await fixture.enqueue(night: "2026-11-30", pipeline: ReportFixture.pipeline(steps: 48, checkpointInterval: 4))
        try await fixture.work("prune,sample")
        // SIGINT once the first checkpoint is written: the train step yields at its next checkpoint.
        let work = try Executables.start("adapt", ["--state", fixture.statePath, "work", "--workers", "train", "--exit-when-idle"],
                                         outputIn: fixture.directory.url)
        var interrupted = false
        for _ in 0..<600 where !interrupted {
            let events = try await fixture.adapt(["events", "--run", run, "--json"])
            if events.stdout.contains("checkpoint ") { work.send(SIGINT); interrupted = true } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(interrupted)
        #expect(await work.exited() == 0)
        try await fixture.work()
        let (data, page) = try await fixture.report([run])
        #expect(data["runs"]?.arrayValue?.first?["state"]?.stringValue == "succeeded")
        let resumes = try #require(data["training"]?["resumes"]?.arrayValue)
        #expect(resumes.count == 1)
        let dom = try chromium.dom(page)
        #expect(DOMCount.elements(dom, classPrefix: "resume") == 1)
        #expect(DOMCount.elements(dom, classPrefix: "bar end-yielded") == 1)
        #expect(DOMCount.elements(dom, classPrefix: "bar ") == (try await fixture.claims(run)))
        #expect(DOMCount.polylinePoints(dom, class: "loss-raw") == 48)
        try expectRendered(page, chromium: chromium)
    }

    @Test func lineageReportPutsAPromotedOrRefusedFirstNightBesideARefusedOne() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        let first = try await fixture.enqueue(night: "2026-11-29")
        try await fixture.work()
        // A significance level no held-out set of this size can reach: the gate cannot say better, the night is refused.
        let second = try await fixture.enqueue(night: "2026-11-30", pipeline: ReportFixture.pipeline(eval: #"{"alpha": 1e-12}"#))
        try await fixture.work()

        let (night, nightPage) = try await fixture.report([second])
        #expect(night["gate"]?["outcome"]?.stringValue == "not_enough_evidence")
        #expect(night["gate"]?["promoted"] == .bool(false))
        let nightDOM = try chromium.dom(nightPage)
        #expect(nightDOM.contains("Refused by the gate"))
        try expectRendered(nightPage, chromium: chromium)

        let (data, page) = try await fixture.report(["--lineage", "logbook"])
        let nights = try #require(data["nights"]?.arrayValue)
        #expect(nights.map { $0["run_id"]?.stringValue } == [first, second])
        #expect(nights[1]["result"]?.stringValue == "refused")
        let dom = try chromium.dom(page)
        #expect(DOMCount.elements(dom, classPrefix: "night result-") == 2)
        #expect(DOMCount.elements(dom, classPrefix: "night result-refused") == nights.filter { $0["result"]?.stringValue == "refused" }.count)
        #expect(DOMCount.elements(dom, classPrefix: "candidate-point") == 2)
        #expect(DOMCount.elements(dom, classPrefix: "version\"") == data["versions"]?.arrayValue?.count)
        try expectRendered(page, chromium: chromium)
    }

    @Test func lineageReportDrawsTheActiveVersionPerNightAndItsChainOfWeightsParents() async throws {
        let chromium = try HeadlessChromium()
        let fixture = try await ReportFixture.make()
        // Night 1 runs without the forgetting guard (on by default): its night has no canary figures.
        let first = try await fixture.enqueue(night: "2026-11-29", pipeline: ReportFixture.pipeline(eval: #"{"canary": null}"#))
        try await fixture.work()
        try #require(try await fixture.output(first, step: "promote")?["promoted"] == .bool(true), "the first night must promote for this test")
        // Night 2 runs the forgetting guard: its figures reach the night's `canary` as the eval step recorded them.
        let second = try await fixture.enqueue(night: "2026-11-30", pipeline: ReportFixture.pipeline(eval: #"{"canary": {}}"#))
        try await fixture.work()
        let secondPromoted = try await fixture.output(second, step: "promote")?["promoted"] == .bool(true)
        // The chain this test draws (v2 active, started from v1), whatever the gate made of night 2.
        if !secondPromoted { try fixture.expectSuccess(await fixture.adapt(["registry", "promote", "logbook/v2", "--force"])) }

        let (data, page) = try await fixture.report(["--lineage", "logbook"])
        let nights = try #require(data["nights"]?.arrayValue)
        try #require(nights.count == 2)
        #expect(nights[0]["started_from"] == .null && nights[0]["start_reason"] == .string("no_active_version"))
        #expect(nights[1]["started_from"] == .string("logbook/v1") && nights[1]["start_reason"] == .string("active_version"))
        #expect(nights[0]["promoted"] == .bool(true) && nights[0]["active_version"] == .string("logbook/v1"))
        #expect(nights[1]["promoted"] == .bool(secondPromoted))
        #expect(nights[1]["active_version"] == .string(secondPromoted ? "logbook/v2" : "logbook/v1"))
        #expect(nights[0]["canary"] == .null)
        let canary = try #require(try await fixture.output(second, step: "eval")?["gate"]?["canary"])
        #expect(canary.objectValue != nil && nights[1]["canary"] == canary, "\(nights[1]["canary"] ?? .null)")
        for night in nights {
            let promoted = night["promoted"] == .bool(true)
            #expect(night["active_mean_nll"] == night[promoted ? "candidate_mean_nll" : "incumbent_mean_nll"], "\(night)")
            #expect(night.objectValue?.keys.contains("canary") == true, "a night has no place for the canary figures")
        }
        let versions = try #require(data["versions"]?.arrayValue)
        #expect(versions.map { $0["trained_from"] } == [.null, .string("logbook/v1")])
        func link(_ index: Int, _ trainedFrom: JSONValue) -> JSONValue {
            var fields: [String: JSONValue] = [:]
            fields["version"] = versions[index]["version"] ?? .null
            fields["trained_from"] = trainedFrom
            fields["retired"] = .bool(false)
            fields["held_out_mean_nll"] = versions[index]["held_out_mean_nll"] ?? .null
            fields["created_at"] = versions[index]["created_at"] ?? .null
            return .object(fields)
        }
        let expectedChain: JSONValue = .array([link(1, .string("logbook/v1")), link(0, .null)])
        #expect(data["chain"] == expectedChain, "\(data["chain"] ?? .null)")

        let dom = try chromium.dom(page)
        #expect(DOMCount.elements(dom, classPrefix: "active-point") == 2)
        #expect(DOMCount.polylinePoints(dom, class: "active-line") == 2)
        #expect(DOMCount.elements(dom, classPrefix: "chain-link") == 2 && DOMCount.elements(dom, classPrefix: "chain-base") == 1)
        #expect(DOMCount.elements(dom, classPrefix: "muted started-from") == 1)
        try expectRendered(page, chromium: chromium)
    }

    @Test func badSubjectsAreRefusedWithAWayOut() async throws {
        let fixture = try await ReportFixture.make()
        let none = try await fixture.adapt(["report"])
        #expect(none.status == 1 && none.stderr.contains("no run yet"))
        let unknown = try await fixture.adapt(["report", "--lineage", "nobody"])
        #expect(unknown.status == 1 && unknown.stderr.contains("lineage nobody has no nightly run"))
        let both = try await fixture.adapt(["report", "run-1", "--lineage", "logbook"])
        #expect(both.status == 2)
        let missing = try await fixture.adapt(["report", "run-99"])
        #expect(missing.status == 1)
    }
}
