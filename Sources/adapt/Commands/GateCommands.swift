import AdaptCore
import CommandLineKit
import Evaluation
import Foundation

/// `adapt gate`: the signed-rank test and the promotion gate on paired scores a person brings.
enum GateCommands {
    static let all: [Command] = [gate]

    static let gate = Command(
        "gate",
        summary: "compare paired per-example losses with the Wilcoxon signed-rank test and give the gate's verdict",
        discussion: """
            Each file holds one loss per held-out example (lower is better), in the same order: a JSON array of \
            numbers, or one number per line (blank lines are skipped). '-' reads standard input. The test runs on \
            candidate − baseline; the outcome is 'better' when the candidate's losses are significantly lower at \
            --alpha, 'worse' when significantly higher, 'not_enough_evidence' otherwise or below --min-pairs. \
            Results agree with scipy.stats.wilcoxon (SciPy 1.17) given the same options.
            """,
        options: [
            OptionSpec("candidate", value: "FILE", help: "the candidate's per-example losses"),
            OptionSpec("baseline", value: "FILE", help: "the incumbent's per-example losses, same examples, same order"),
            OptionSpec("alternative", value: "less|greater|two-sided", help: "alternative hypothesis on candidate − baseline (default less)"),
            OptionSpec("method", value: "auto|exact|approx", help: "p-value computation (default auto: SciPy's rule)"),
            OptionSpec("zero-method", value: "wilcox|pratt|zsplit", help: "treatment of zero differences (default wilcox)"),
            .flag("correction", help: "apply the continuity correction to the normal approximation"),
            OptionSpec("alpha", value: "A", help: "significance level, in (0, 0.5] (default 0.05)"),
            OptionSpec("min-pairs", value: "N", help: "fewer pairs than this give not_enough_evidence (default 10)"),
            .json,
        ]
    ) { invocation in
        let args = invocation.arguments
        let candidatePath = try args.required("candidate"), baselinePath = try args.required("baseline")
        if candidatePath == "-" && baselinePath == "-" {
            throw UsageError("only one of --candidate and --baseline can read standard input")
        }
        var options = WilcoxonOptions()
        options.alternative = try args.choice("alternative", Alternative.allCases.map(\.rawValue)).flatMap(Alternative.init) ?? .less
        options.method = try args.choice("method", WilcoxonMethod.allCases.map(\.rawValue)).flatMap(WilcoxonMethod.init) ?? .auto
        options.zeroMethod = try args.choice("zero-method", ZeroMethod.allCases.map(\.rawValue)).flatMap(ZeroMethod.init) ?? .wilcox
        options.correction = args.flag("correction")
        let alpha = try args.double("alpha") ?? PromotionGate.defaultAlpha
        guard alpha > 0, alpha <= 0.5 else { throw UsageError("--alpha must be in (0, 0.5], got \(alpha)") }
        let minimumPairs = try args.int("min-pairs", default: PromotionGate.defaultMinimumPairs, in: 0...1_000_000_000)

        let candidate = try ScoreFile.read(candidatePath, role: "candidate")
        let baseline = try ScoreFile.read(baselinePath, role: "baseline")
        guard candidate.count == baseline.count else {
            throw ScoreFileError.unequalLengths(candidate: candidatePath, candidateCount: candidate.count,
                                                baseline: baselinePath, baselineCount: baseline.count)
        }
        let gate = try PromotionGate(alpha: alpha, minimumPairs: minimumPairs, options: options)
        let report = try gate.evaluate(candidate: candidate, baseline: baseline)
        if args.flag("json") {
            Console.print(JSON.pretty(report))
        } else {
            Console.print(describe(report))
        }
    }

    static func describe(_ r: GateReport) -> String {
        func number(_ value: Double?) -> String { value.map { String(format: "%.6g", $0) } ?? "-" }
        return """
            outcome            \(r.outcome.rawValue): \(r.reason)
            pairs              \(r.pairs) (\(r.zeros) zero differences, \(r.n) ranked)
            pairs needed       \(r.minPairs)\(r.morePairsNeeded > 0 ? " (\(r.morePairsNeeded) more needed before the gate can judge)" : "")
            statistic          \(number(r.statistic))
            p-value            \(number(r.pValue)) (\(r.alternative.rawValue), \(r.method), zero method \(r.zeroMethod.rawValue)\(r.correction ? ", continuity correction" : ""))
            median difference  \(number(r.medianDifference)) (candidate − baseline)
            effect size        \(number(r.effectSize)) (matched-pairs rank-biserial; negative favours the candidate)
            """
    }
}
