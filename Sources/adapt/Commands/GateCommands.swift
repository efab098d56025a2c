import AdaptCore
import CommandLineKit
import Foundation
import Services

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
            --alpha, 'worse' when significantly higher, 'not_enough_evidence' otherwise, below --min-pairs, or when \
            the median improvement (baseline − candidate) is below --min-effect. \
            Results agree with scipy.stats.wilcoxon (SciPy 1.17) given the same options.
            """,
        options: [candidate, baseline, alternative, method, zeroMethod, correction, alpha, minimumPairs, minimumEffect, .json]
    ) { invocation in
        let args = invocation.arguments
        let candidatePath = try args.required(candidate), baselinePath = try args.required(baseline)
        if candidatePath == "-" && baselinePath == "-" {
            throw UsageError("only one of --candidate and --baseline can read standard input")
        }
        var options = WilcoxonOptions()
        options.alternative = try args[alternative]
        options.method = try args[method]
        options.zeroMethod = try args[zeroMethod]
        options.correction = args[correction]
        let alpha = try args[alpha]
        let minimumPairs = try args[minimumPairs]
        let minimumEffect = try args[minimumEffect]

        let candidateScores = try ScoreFile.read(candidatePath, role: "candidate")
        let baselineScores = try ScoreFile.read(baselinePath, role: "baseline")
        guard candidateScores.count == baselineScores.count else {
            throw ScoreFileError.unequalLengths(candidate: candidatePath, candidateCount: candidateScores.count,
                                                baseline: baselinePath, baselineCount: baselineScores.count)
        }
        let report = try GateService.evaluate(candidate: candidateScores, baseline: baselineScores, alpha: alpha,
                                              minimumPairs: minimumPairs, options: options, minimumEffect: minimumEffect)
        if args[.json] {
            Console.print(JSON.pretty(report))
        } else {
            Console.print(describe(report))
        }
    }

    static let candidate = Option<String?>("candidate", value: "FILE", help: "the candidate's per-example losses")
    static let baseline = Option<String?>("baseline", value: "FILE",
                                          help: "the incumbent's per-example losses, same examples, same order")
    static let alternative = Option("alternative", default: Alternative.less,
                                    help: "alternative hypothesis on candidate − baseline")
    static let method = Option("method", default: WilcoxonMethod.auto, help: "p-value computation (auto is SciPy's rule)")
    static let zeroMethod = Option("zero-method", default: ZeroMethod.wilcox, help: "treatment of zero differences")
    static let correction = Flag("correction", help: "apply the continuity correction to the normal approximation")
    static let alpha = Option("alpha", value: "A", default: GateService.defaultAlpha,
                              defaultHelp: "\(GateService.defaultAlpha)", help: "significance level, in (0, 0.5]") { text in
        let value = try OptionParsing.number(text)
        guard value > 0, value <= 0.5 else { throw UsageError("must be in (0, 0.5], got \(value)") }
        return value
    }
    static let minimumPairs = Option("min-pairs", default: GateService.defaultMinimumPairs, in: 0...1_000_000_000,
                                     help: "fewer pairs than this give not_enough_evidence")

    static let minimumEffect = Option<Double?>("min-effect", value: "NATS", in: 0...1_000_000,
                                               help: "the smallest median improvement (baseline − candidate, in the scores' unit) that can be better (default none)")

    static func describe(_ r: GateReport) -> String {
        func number(_ value: Double?) -> String { value.map { String(format: "%.6g", $0) } ?? "-" }
        return """
            outcome            \(r.outcome.rawValue): \(r.reason)
            pairs              \(r.pairs) (\(r.zeros) zero differences, \(r.n) ranked)
            minimum effect     \(r.minEffect.map { number($0) } ?? "none") (median improvement needed for better)
            pairs needed       \(r.minPairs)\(r.morePairsNeeded > 0 ? " (\(r.morePairsNeeded) more needed before the gate can judge)" : "")
            statistic          \(number(r.statistic))
            p-value            \(number(r.pValue)) (\(r.alternative.rawValue), \(r.method), zero method \(r.zeroMethod.rawValue)\(r.correction ? ", continuity correction" : ""))
            median difference  \(number(r.medianDifference)) (candidate − baseline)
            effect size        \(number(r.effectSize)) (matched-pairs rank-biserial; negative favours the candidate)
            """
    }
}
