import AdaptCore
import Pipelines
import Testing

// A step input can come from `adapt enqueue run` with any JSON; the step bodies accept only what a pipeline that
// passes `adapt pipeline check` could have planned.

private func plannedInput(_ kind: StepKind) throws -> [String: JSONValue] {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"))
    return try #require(run.steps.first { $0.kind == kind.rawValue }?.input.objectValue)
}

private func problems(_ kind: StepKind, _ change: (inout [String: JSONValue]) -> Void) throws -> [String] {
    var input = try plannedInput(kind)
    change(&input)
    return StepInputCheck.problems(.object(input), kind: kind).map(\.message)
}

@Test(arguments: StepKind.allCases)
func everyPlannedStepInputPasses(kind: StepKind) throws {
    #expect(try problems(kind) { _ in } == [])
}

@Test(arguments: [-1, 0, Int.min, 36_501, Int.max])
func pruneInputWithTTLOutsidePipelineBoundsIsRefused(ttl: Int) throws {
    let found = try problems(.prune) { $0["ttl_days"] = .int(ttl) }
    #expect(found.count == 1)
    #expect(found.first?.hasPrefix("ttl_days must be") == true)
}

@Test func pruneInputWithoutTTLIsRefused() throws {
    #expect(try problems(.prune) { $0["ttl_days"] = nil }.first?.hasPrefix("ttl_days is required") == true)
    #expect(try problems(.prune) { $0["ttl_days"] = .string("30") }.count == 1)
    #expect(try problems(.prune) { $0["ttl_days"] = .double(1.5) }.count == 1)
}

@Test func stepInputWithAnUnsafeLineageNightOrSeedIsRefused() throws {
    #expect(try problems(.prune) { $0["lineage"] = .string("..") }.first?.hasPrefix("lineage must be") == true)
    #expect(try problems(.prune) { $0["night"] = .string("2026-13-01") }.first?.hasPrefix("night must be") == true)
    #expect(try problems(.prune) { $0["seed"] = .int(-1) }.first?.hasPrefix("seed must be") == true)
    #expect(StepInputCheck.problems(.array([]), kind: .prune).count == 1)
}

@Test func sampleInputOutsidePipelineBoundsIsRefused() throws {
    #expect(try problems(.sample) { $0["sample_size"] = .int(0) }.count == 1)
    #expect(try problems(.sample) { $0["max_tokens_per_night"] = .int(-5) }.count == 1)
    #expect(try problems(.sample) { $0["max_uses_per_example"] = .int(Int.max) }.count == 1)
    #expect(try problems(.sample) { $0["held_out_fraction"] = .double(1.5) }.count == 1)
}

@Test func trainInputOutsidePipelineBoundsIsRefused() throws {
    #expect(try problems(.train) { $0["blas_threads"] = .int(0) }.count == 1)
    #expect(try problems(.train) { $0["rank"] = .int(-8) }.count == 1)
    #expect(try problems(.train) { $0["learning_rate"] = .double(7) }.count == 1)
    #expect(try problems(.train) { $0["warmup_steps"] = .int(1_000) }.count == 1)
    #expect(try problems(.train) { $0["device"] = .int(3) }.count == 1)
    #expect(try problems(.train) { $0["device"] = nil }.first?.hasPrefix("device is required") == true)
    // A retry delay of Int.max minutes would overflow when the policy turns it into seconds.
    #expect(try problems(.train) {
        $0["device"] = .object(DevicePolicy().fields.merging(["retry_after_minutes": .int(Int.max)]) { $1 })
    } == ["device.retry_after_minutes must be at most 1440, got \(Int.max)"])
}

@Test func evalInputOutsidePipelineBoundsIsRefused() throws {
    #expect(try problems(.eval) { $0["alpha"] = .double(7) }.count == 1)
    #expect(try problems(.eval) { $0["min_pairs"] = .int(-5) }.count == 1)
    #expect(try problems(.eval) { $0["alternative"] = .string("sideways") }.count == 1)
    #expect(try problems(.eval) { $0["blas_threads"] = .int(1_000_000) }.count == 1)
    #expect(try problems(.eval) { $0["max_length"] = .int(0) }.count == 1)
}

private extension DevicePolicy {
    var fields: [String: JSONValue] {
        (try? JSON.decode(JSONValue.self, from: JSON.canonical(self), context: "policy"))?.objectValue ?? [:]
    }
}

@Test func evalInputPlannedBeforeOnWorseExistedPassesAndAnUnknownChoiceIsRefused() throws {
    #expect(try plannedInput(.eval)["on_worse"] == .string("keep"))
    #expect(try problems(.eval) { $0["on_worse"] = nil } == [], "an eval step planned before the setting keeps a worse night's data")
    #expect(try problems(.eval) { $0["on_worse"] = .string("drop") }
            == [#"on_worse must be one of keep, quarantine, got "drop""#])
}
