import AdaptCore
import Foundation
import ReplayBuffer
import Testing
import TestSupport

/// `data import` and `data stats` tell when a lineage is too small for the gate, and how many examples to add.
@Test func importAndStatsSayHowManyMoreExamplesTheGateNeeds() throws {
    let adapt = AdaptData()
    let eight = try adapt.write("eight.jsonl", String(decoding: BufferFixture.lines(8), as: UTF8.self))
    let imported = try adapt.run(["data", "import", eight, "--lineage", "mail"])
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(imported.stdout.contains("8 held-out pairs; the gate needs 10: import 2 more"), "\(imported.stdout)")

    let stats = try adapt.run(["data", "stats", "--lineage", "mail"])
    #expect(stats.stdout.contains("mail: 8 held-out pairs; the gate needs 10: import 2 more"), "\(stats.stdout)")
    let statsJSON = try #require(try adapt.json(["data", "stats", "--lineage", "mail"]).arrayValue?.first)
    #expect(statsJSON["gate_readiness"]?["held_out"]?.intValue == 8)
    #expect(statsJSON["gate_readiness"]?["min_pairs"]?.intValue == 10)
    #expect(statsJSON["gate_readiness"]?["more_examples_needed"]?.intValue == 2)
    #expect(statsJSON["gate_readiness"]?["can_be_judged"]?.boolValue == false)
    #expect(statsJSON["policy"]?["min_held_out"]?.intValue == 10)

    // Exactly the two asked for make the lineage judgeable.
    let two = try adapt.write("two.jsonl", String(decoding: BufferFixture.lines(2, from: 8), as: UTF8.self))
    let report = try adapt.json(["data", "import", two, "--lineage", "mail"])
    #expect(report["held_out"]?.intValue == 2)
    #expect(report["gate_readiness"]?["held_out"]?.intValue == 10)
    #expect(report["gate_readiness"]?["more_examples_needed"]?.intValue == 0)
    #expect(report["gate_readiness"]?["sentence"]?.stringValue == "10 held-out pairs; the gate needs 10")
    let after = try adapt.run(["data", "stats", "--lineage", "mail"])
    #expect(after.stdout.contains("mail: 10 held-out pairs; the gate needs 10") && !after.stdout.contains("import"), "\(after.stdout)")
}
