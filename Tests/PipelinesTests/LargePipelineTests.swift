import Foundation
import Pipelines
import Testing
import TestSupport

// A pipeline file can list any number of steps. `pipeline check` walks the graph without recursion and in
// time linear in its size, so 100,000 steps get an answer instead of a stack overflow.

/// `count` steps, each depending on the one before; the first depends on the last when `cycle` is true.
/// The last four are sample → train → eval → promote, so the upstream-kind rules run over the whole chain.
private func chain(_ count: Int, cycle: Bool) -> Data {
    let kinds = Array(repeating: "prune", count: count - 4) + ["sample", "train", "eval", "promote"]
    let steps = (0..<count).map { index in
        let parent = index > 0 ? "\"s\(index - 1)\"" : (cycle ? "\"s\(count - 1)\"" : "")
        return "{\"name\": \"s\(index)\", \"kind\": \"\(kinds[index])\", \"depends_on\": [\(parent)]}"
    }
    return Data(("{\"steps\": [" + steps.joined(separator: ",\n") + "]}").utf8)
}

/// `adapt pipeline check` on a chain of `count` steps.
private func check(_ count: Int, cycle: Bool) throws -> ProcessResult {
    let dir = TemporaryDirectory()
    let file = dir.file("pipeline.json")
    try chain(count, cycle: cycle).write(to: file)
    return try Executables.run("adapt", ["pipeline", "check", file.path])
}

@Test func checkAcceptsAHundredThousandStepChain() throws {
    let result = try check(100_000, cycle: false)
    #expect(result.status == 0, "\(result.stderr.prefix(300))")
}

@Test func checkReportsAHundredThousandStepCycle() throws {
    let result = try check(100_000, cycle: true)
    #expect(result.status == 1, "\(result.stderr.prefix(300))")
    #expect(result.stderr.contains("steps form a cycle: s0 → s1 → s2"))
}

@Test func plannedOrderOfALongPipelineFollowsDependenciesAndFileOrder() throws {
    // Listed backwards: each step depends on the one after it in the file.
    let count = 20_000
    let steps = (0..<count).map { index in
        PipelineStep(name: "s\(index)", kind: .prune, dependsOn: index + 1 < count ? ["s\(index + 1)"] : [])
    }
    let pipeline = Pipeline(name: "long", steps: steps)
    let run = try plan(pipeline: pipeline, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 1)
    #expect(run.steps.map(\.name) == (0..<count).reversed().map { "s\($0)" })
}
