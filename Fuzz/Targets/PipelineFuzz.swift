import AdaptCore
import Foundation
import Pipelines

/// Pipeline files (`adapt pipeline check`, `adapt run`): parsed and validated, every problem collected.
public enum PipelineFuzz: FuzzTarget {
    public static let name = "pipeline"

    public static func run(_ data: Data) {
        guard let pipeline = try? Pipeline.parse(data, source: "fuzz.json") else { return }
        // What validation accepts is what gets stored and planned: it must survive its own encoding…
        guard let again = try? Pipeline.parse(JSON.canonical(pipeline), source: "fuzz.json"), again == pipeline else {
            FuzzFinding.fail(name, "a valid pipeline does not read back from its own encoding")
        }
        // …and plan a run without failing on what validation let by.
        do { _ = try plan(pipeline: pipeline, lineage: "fuzz", night: Night(year: 2026, month: 12, day: 1)!) } catch {
            FuzzFinding.fail(name, "a valid pipeline does not plan: \(error)")
        }
    }

    public static func seeds() throws -> [Data] {
        try [FuzzFixtures.data("pipelines/nightly.json"), FuzzFixtures.data("pipelines/examples/logbook/pipeline.json")]
    }
}
