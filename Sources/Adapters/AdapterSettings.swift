/// The LoRA settings an adapter is made with: what a training run records in its configuration and
/// checkpoints, and (all but dropout, which only exists in training) what an adapter file's header says.
///
/// Targets are projection names (`q`, `k`, … as the Model module names them) kept as text: this module sits
/// below the model, whose `LoRAConfig(settings)` checks that each name is a projection.
public struct AdapterSettings: Sendable, Equatable, Codable {
    public var rank: Int
    public var alpha: Float
    public var dropout: Float
    /// Projection names, e.g. ["q", "k", "v", "o"].
    public var targets: [String]

    /// The largest alpha an adapter may have. Published recipes stay within a few thousand (alpha twice a rank of
    /// 1024); past this the update B·A·x times alpha / rank overflows f32 on ordinary weights, so a larger value
    /// is a damaged or hostile file, not a choice.
    public static let maximumAlpha: Float = 1_000_000

    /// Whether `alpha` is one an adapter can be applied with: finite, above 0, at most `maximumAlpha`.
    public static func isPlausible(alpha: Double) -> Bool {
        alpha.isFinite && alpha > 0 && alpha <= Double(maximumAlpha)
    }

    public init(rank: Int = 8, alpha: Float = 16, dropout: Float = 0, targets: [String] = ["q", "k", "v", "o"]) {
        self.rank = rank
        self.alpha = alpha
        self.dropout = dropout
        self.targets = targets
    }
}
