import AdaptCore
import Foundation
import Testing
import TestSupport
@testable import Evaluation

/// The gate report says how many pairs it had, how many it needs, and how many are missing.
@Test func tooFewPairsReportHowManyMoreTheGateNeeds() throws {
    let (candidate, baseline) = pairedLosses(n: 8, shift: -0.5)
    let report = try PromotionGate().evaluate(candidate: candidate, baseline: baseline)
    #expect(report.outcome == .notEnoughEvidence)
    #expect(report.pairs == 8 && report.minPairs == 10 && report.morePairsNeeded == 2)
    #expect(try PromotionGate(minimumPairs: 8).evaluate(candidate: candidate, baseline: baseline).morePairsNeeded == 0)

    let cli = GateCommand()
    let c = try cli.write("c.json", "[" + candidate.map { "\($0)" }.joined(separator: ",") + "]")
    let b = try cli.write("b.json", "[" + baseline.map { "\($0)" }.joined(separator: ",") + "]")
    let json = try cli.run(["--candidate", c, "--baseline", b, "--json"])
    #expect(json.status == 0, "\(json.stderr)")
    let object = try JSON.decode(JSONValue.self, from: json.stdout, context: "gate")
    #expect(object["pairs"]?.intValue == 8 && object["min_pairs"]?.intValue == 10 && object["more_pairs_needed"]?.intValue == 2)
    let text = try cli.run(["--candidate", c, "--baseline", b])
    #expect(text.stdout.contains("pairs needed       10 (2 more needed before the gate can judge)"), "\(text.stdout)")
}
