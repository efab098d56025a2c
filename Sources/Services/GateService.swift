import Evaluation

/// `adapt gate`: the promotion gate's signed-rank test on paired scores a person brings.
public enum GateService {
    /// The gate's verdict on `candidate` against `baseline` (one loss per held-out example, same order).
    /// `minimumEffect`: the smallest median improvement (baseline − candidate) that can be `better`; nil: none.
    public static func evaluate(candidate: [Double], baseline: [Double], alpha: Double, minimumPairs: Int,
                                options: WilcoxonOptions, minimumEffect: Double? = nil) throws -> GateReport {
        try PromotionGate(alpha: alpha, minimumPairs: minimumPairs, options: options, minimumEffect: minimumEffect)
            .evaluate(candidate: candidate, baseline: baseline)
    }

    public static var defaultAlpha: Double { PromotionGate.defaultAlpha }
    public static var defaultMinimumPairs: Int { PromotionGate.defaultMinimumPairs }
}
