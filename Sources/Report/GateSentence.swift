/// The gate's decision in words: what was compared, by which test, with which numbers, and what became of the
/// candidate. Made of fixed words and the report's numbers only.
enum GateSentence {
    static func comparison(_ gate: ReportGate) -> String {
        let against = gate.comparedWith == "base" ? "the base model (no adapter was active yet)" : "the active adapter \(gate.comparedWith)"
        return "The candidate was compared with \(against) on \(gate.pairs) held-out example\(gate.pairs == 1 ? "" : "s")."
    }

    static func test(_ gate: ReportGate) -> String {
        let question: String
        switch gate.alternative {
        case "less": question = "one-sided: is the candidate's NLL lower?"
        case "greater": question = "one-sided: is the candidate's NLL higher?"
        default: question = "two-sided: do they differ?"
        }
        let method: String
        switch gate.method {
        case "exact": method = "exact null distribution"
        case "approx": method = "normal approximation"
        case "permutation": method = "permutation distribution"
        default: method = gate.method
        }
        let numbers = gate.statistic.map { "statistic W = \(Markup.number($0)), p = \(Markup.number(gate.pValue)) at α = \(Markup.number(gate.alpha))" }
            ?? "no statistic (too few pairs to test; α = \(Markup.number(gate.alpha)))"
        return "Wilcoxon signed-rank test (\(question) \(method), zero differences by \(gate.zeroMethod), n = \(gate.n) non-zero pairs): \(numbers)."
    }

    static func outcome(_ gate: ReportGate) -> String {
        switch gate.outcome {
        case "better": return "Outcome: better. The candidate's held-out NLL is significantly lower."
        case "worse": return "Outcome: worse. The candidate's held-out NLL is significantly higher."
        default: return "Outcome: not enough evidence that the candidate is better."
        }
    }

    static func decision(_ gate: ReportGate) -> String {
        let version = gate.version.map { " as \($0)" } ?? ""
        guard let promoted = gate.promoted else { return "The promote step has not run." }
        if promoted { return "Promoted\(version): it is the active adapter now." }
        switch gate.promoteReason {
        case "incumbent_moved": return "Not promoted: the active adapter changed while this run evaluated; registered\(version), not active."
        case "gate_worse": return "Refused by the gate: registered\(version), not active; the current adapter stays."
        default: return "Refused by the gate: registered\(version), not active; the current adapter stays."
        }
    }
}
