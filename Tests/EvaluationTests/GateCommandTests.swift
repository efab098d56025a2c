import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt gate` run as a real process.
struct GateCommand {
    let dir = TemporaryDirectory("gate-cli")

    func write(_ name: String, _ text: String) throws -> String {
        try text.write(to: dir.file(name), atomically: false, encoding: .utf8)
        return dir.file(name).path
    }

    func run(_ arguments: [String], input: String? = nil) throws -> ProcessResult {
        try Executables.run("adapt", ["gate"] + arguments, input: input)
    }
}

@Test func gateJSONHasExactlyTheDocumentedFieldsAndMatchesSciPy() throws {
    let cli = GateCommand()
    // scipy.stats.wilcoxon(c, b, alternative='less'): statistic 5.0, pvalue 0.0087890625 (exact, n = 10).
    let baseline = try cli.write("b.txt", "2.0\n2.1\n2.2\n2.3\n2.4\n2.5\n2.6\n2.7\n2.8\n2.9\n")
    let candidate = try cli.write("c.json", "[1.9, 2.05, 2.31, 2.1, 2.3, 2.35, 2.45, 2.62, 2.6, 2.5]")
    let result = try cli.run(["--candidate", candidate, "--baseline", baseline, "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let object = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8)).objectValue)
    for key in ["n", "statistic", "p_value", "method", "zero_method", "alternative", "median_difference", "effect_size", "outcome"] {
        #expect(object[key] != nil, "missing \(key)")
    }
    #expect(object["statistic"]?.doubleValue == 5)
    #expect(object["p_value"]?.doubleValue == 0.0087890625)
    #expect(object["outcome"] == .string("better"))
    #expect(object["alternative"] == .string("less"))
    #expect(result.stderr.isEmpty)
}

@Test func gateReadsOneSideFromStandardInput() throws {
    let cli = GateCommand()
    let candidate = try cli.write("c.txt", (1...12).map { "\(Double($0) + 0.5)" }.joined(separator: "\n"))
    let result = try cli.run(["--candidate", candidate, "--baseline", "-", "--json", "--min-pairs", "5"],
                             input: (1...12).map { "\($0)" }.joined(separator: "\n"))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("\"outcome\" : \"worse\""))
}

@Test func gateRejectsBadInputNamingTheFileAndPosition() throws {
    let cli = GateCommand()
    let good = try cli.write("good.txt", "1\n2\n3\n")
    let cases: [(String, String, String)] = [
        ("short.txt", "1\n2\n", "has 2 scores but"),
        ("nan.txt", "1\nnan\n3\n", "nan.txt line 2 is not finite"),
        ("inf.json", "[1, 2, 1e999]", "is not"),
        ("word.txt", "1\n2\nsecret-word\n", "word.txt line 3 is not a number"),
        ("hex.txt", "1\n0x10\n3\n", "hex.txt line 2 is not a number"),
        ("mixed.json", "[1, \"two\", 3]", "mixed.json element [1] is not a number"),
        ("empty.txt", "\n\n", "empty.txt holds no scores"),
    ]
    for (name, contents, message) in cases {
        let path = try cli.write(name, contents)
        let result = try cli.run(["--candidate", path, "--baseline", good])
        #expect(result.status == 1, "\(name)")
        #expect(result.stderr.contains(message), "\(name): \(result.stderr)")
        #expect(!result.stderr.contains("secret-word"))
        #expect(result.stdout.isEmpty)
    }
    let missing = try cli.run(["--candidate", cli.dir.file("absent.txt").path, "--baseline", good])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("absent.txt"))
}

@Test(arguments: [["--alternative", "sideways"], ["--method", "magic"], ["--zero-method", "drop"], ["--alpha", "0.9"], ["--min-pairs", "x"]])
func gateOptionsOutsideTheirRangeExitTwo(_ extra: [String]) throws {
    let cli = GateCommand()
    let good = try cli.write("good.txt", "1\n2\n3\n")
    #expect(try cli.run(["--candidate", good, "--baseline", good] + extra).status == 2)
}

@Test func gateUsageErrorsExitTwo() throws {
    let cli = GateCommand()
    let good = try cli.write("good.txt", "1\n2\n3\n")
    #expect(try cli.run(["--candidate", good]).status == 2)
    #expect(try cli.run(["--candidate", "-", "--baseline", "-"]).status == 2)
}

@Test func gateOptionsReachTheTest() throws {
    let cli = GateCommand()
    // Ties and a zero with 14 pairs: SciPy's auto rule uses the normal approximation.
    let baseline = try cli.write("b.txt", [Double](repeating: 1, count: 14).map { "\($0)" }.joined(separator: "\n"))
    let candidate = try cli.write("c.txt", [0.5, 0.5, 0.75, 1, 0.25, 0.5, 1.5, 0.5, 0.75, 0.75, 0.5, 1.25, 0.5, 0.5].map { "\($0)" }.joined(separator: "\n"))
    let result = try cli.run(["--candidate", candidate, "--baseline", baseline, "--json", "--zero-method", "pratt",
                              "--correction", "--alternative", "two-sided", "--alpha", "0.01"])
    #expect(result.status == 0, "\(result.stderr)")
    let object = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8)).objectValue)
    #expect(object["method"] == .string("approx"))
    #expect(object["zero_method"] == .string("pratt"))
    #expect(object["alternative"] == .string("two-sided"))
    #expect(object["correction"] == .bool(true))
    #expect(object["alpha"]?.doubleValue == 0.01)
    #expect(object["zeros"]?.intValue == 1)
    // SciPy: wilcoxon(c, b, zero_method='pratt', correction=True) → statistic 13.0, pvalue 0.013280662629748507.
    #expect(object["statistic"]?.doubleValue == 13)
    let p = try #require(object["p_value"]?.doubleValue)
    #expect(Swift.abs(p - 0.013280662629748507) <= 1e-9 * p)
    #expect(object["outcome"] == .string("not_enough_evidence"))
}

@Test func gateMinEffectTurnsATinyConsistentImprovementIntoNotEnoughEvidence() throws {
    let cli = GateCommand()
    // Ten examples each about 1e-4 nats better: p = 2^-10 without a minimum.
    let baseline = try cli.write("b.txt", (0..<10).map { "\(2 + Double($0) / 10)" }.joined(separator: "\n"))
    let candidate = try cli.write("c.txt", (0..<10).map { "\(2 + Double($0) / 10 - 0.0001 * (1 + Double($0) / 100))" }.joined(separator: "\n"))
    let plain = try cli.run(["--candidate", candidate, "--baseline", baseline, "--json"])
    #expect(plain.status == 0, "\(plain.stderr)")
    let plainReport = try JSONDecoder().decode(JSONValue.self, from: Data(plain.stdout.utf8))
    #expect(plainReport["outcome"] == .string("better") && plainReport["min_effect"] == .null)

    let guarded = try cli.run(["--candidate", candidate, "--baseline", baseline, "--min-effect", "0.01", "--json"])
    #expect(guarded.status == 0, "\(guarded.stderr)")
    let report = try JSONDecoder().decode(JSONValue.self, from: Data(guarded.stdout.utf8))
    #expect(report["outcome"] == .string("not_enough_evidence"))
    #expect(report["min_effect"]?.doubleValue == 0.01 && report["p_value"] == plainReport["p_value"])
    #expect(report["reason"]?.stringValue?.contains("below the minimum effect of 0.01") == true)

    let negative = try cli.run(["--candidate", candidate, "--baseline", baseline, "--min-effect", "-1"])
    #expect(negative.status == 2 && negative.stderr.contains("--min-effect"), "\(negative.stderr)")
}
