import AdaptCore
import Foundation
import Pipelines
import Testing
@testable import Steps

/// A worse night whose first-order estimate blames no source (`SourceAttribution`): runs planned with
/// `blame_fallback` blame every source trained on that night, runs planned before blame nobody, as recorded.
@Suite struct BlameFallbackTests {
    static let unexplained = [
        SourceAttribution.Source(name: "night-4", examples: 3, quarantined: 0, trained: 2, nllChange: -0.1),
        SourceAttribution.Source(name: "night-5", examples: 4, quarantined: 0, trained: 3, nllChange: -0.02),
        SourceAttribution.Source(name: "night-3", examples: 2, quarantined: 0, trained: 0, nllChange: nil),
    ]

    static func attribution(_ sources: [SourceAttribution.Source], fallback: Bool) -> SourceAttribution {
        SourceAttribution(since: 1_000, until: 2_000, learningRate: 5e-4, heldOutExamples: 10, sources: sources,
                          fallsBackToEverySource: fallback)
    }

    static func fields(_ attribution: SourceAttribution) throws -> [String: JSONValue] {
        try #require(try JSON.decode(JSONValue.self, from: JSON.canonical(attribution), context: "attribution").objectValue)
    }

    @Test func aWorseNightNoEstimateBlamesBlamesEverySourceItTrainedOnAndSaysSo() throws {
        let attribution = Self.attribution(Self.unexplained, fallback: true)
        #expect(attribution.blamed == ["night-4", "night-5"], "night-3 had nothing in tonight's training set")
        let fields = try Self.fields(attribution)
        #expect(fields["blame_rule"] == .string("every_source") && fields["blame_fallback"] == .bool(true))
        let decoded = try JSON.decode(SourceAttribution.self, from: JSON.canonical(attribution), context: "attribution")
        #expect(decoded == attribution && decoded.blamed == attribution.blamed)
    }

    @Test func aSourceTheEstimateBlamesIsBlamedAloneUnderEitherRule() throws {
        var sources = Self.unexplained
        sources[1] = SourceAttribution.Source(name: "night-5", examples: 4, quarantined: 0, trained: 3, nllChange: 0.3)
        #expect(Self.attribution(sources, fallback: true).blamed == ["night-5"])
        #expect(try Self.fields(Self.attribution(sources, fallback: true))["blame_rule"] == .string("gradient_alignment"))
        #expect(Self.attribution(sources, fallback: false).blamed == ["night-5"])
    }

    @Test func anAttributionRecordedBeforeTheRuleBlamesNobodyAndKeepsItsBytes() throws {
        let recorded = Self.attribution(Self.unexplained, fallback: false)
        #expect(recorded.blamed.isEmpty)
        let fields = try Self.fields(recorded)
        #expect(fields["blame_rule"] == nil && fields["blame_fallback"] == nil)
        #expect(try JSON.decode(SourceAttribution.self, from: JSON.canonical(recorded), context: "attribution") == recorded)
    }

    @Test func everyEvalStepIsPlannedWithTheFallbackAndAnInputWithoutItIsValid() throws {
        let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(year: 2026, month: 12, day: 1)!, seed: 7)
        var input = try #require(run.steps[3].input.objectValue)
        #expect(LaterRule.blameEverySource.holds(for: .object(input)))
        input[LaterRule.blameEverySource.field] = nil
        #expect(StepInputCheck.problems(.object(input), kind: .eval).isEmpty && !LaterRule.blameEverySource.holds(for: .object(input)))
        input[LaterRule.blameEverySource.field] = .string("everyone")
        #expect(StepInputCheck.problems(.object(input), kind: .eval).map(\.path) == [LaterRule.blameEverySource.field])
    }
}
