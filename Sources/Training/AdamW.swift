import Adapters
import Foundation

/// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019), in the form PyTorch's
/// `torch.optim.AdamW` computes it, so numbers can be checked against that formula:
///
///     θ ← θ · (1 − lr·λ)                                  decoupled weight decay
///     m ← β1·m + (1 − β1)·g                               first moment
///     v ← β2·v + (1 − β2)·g²                              second moment
///     θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)   bias-corrected step
///
/// With `decaysTowardWeightsParent`, a warm-started run's decay pulls toward the weights it started from instead
/// of toward zero, θ ← θ₀ + (θ − θ₀)·(1 − lr·λ) (L2-SP: Li, Grandvalet & Davoine, "Explicit Inductive Bias for
/// Transfer Learning with Convolutional Networks", ICML 2018): decay toward zero would erode, night after night,
/// what the whole chain of weights parents learnt (at the defaults, about 0.05 % of it a night), while this only
/// holds tonight's change back. It reads no text, so it is rehearsal the privacy budget does not pay for.
///
/// The optimizer itself holds only its hyperparameters; everything that changes lives in `AdamWState`,
/// a value the checkpoint serializes, so restoring it restores the optimizer exactly.
public struct AdamW: Sendable, Equatable, Codable {
    public var beta1: Double
    public var beta2: Double
    public var epsilon: Double
    /// λ, applied as θ·(1 − lr·λ) before the Adam step (decoupled: not added to the gradient).
    public var weightDecay: Double
    /// Gradients are scaled so their global L2 norm is at most this (PyTorch's `clip_grad_norm_`); nil: no clipping.
    public var maxGradientNorm: Double?
    /// A run with a weights parent decays toward the parent's weights (the `anchor` of `step`), not toward zero.
    public var decaysTowardWeightsParent: Bool

    public init(beta1: Double = 0.9, beta2: Double = 0.999, epsilon: Double = 1e-8,
                weightDecay: Double = 0.01, maxGradientNorm: Double? = 1.0, decaysTowardWeightsParent: Bool = false) {
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.maxGradientNorm = maxGradientNorm
        self.decaysTowardWeightsParent = decaysTowardWeightsParent
    }

    enum CodingKeys: String, CodingKey {
        case beta1, beta2, epsilon, weightDecay, maxGradientNorm, decaysTowardWeightsParent
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(beta1: try c.decode(Double.self, forKey: .beta1), beta2: try c.decode(Double.self, forKey: .beta2),
                  epsilon: try c.decode(Double.self, forKey: .epsilon), weightDecay: try c.decode(Double.self, forKey: .weightDecay),
                  maxGradientNorm: try c.decodeIfPresent(Double.self, forKey: .maxGradientNorm),
                  decaysTowardWeightsParent: try c.decodeIfPresent(Bool.self, forKey: .decaysTowardWeightsParent) ?? false)
    }

    /// Written only when on: a configuration without it keeps the digest its checkpoints recorded.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(beta1, forKey: .beta1)
        try c.encode(beta2, forKey: .beta2)
        try c.encode(epsilon, forKey: .epsilon)
        try c.encode(weightDecay, forKey: .weightDecay)
        try c.encodeIfPresent(maxGradientNorm, forKey: .maxGradientNorm)
        if decaysTowardWeightsParent { try c.encode(true, forKey: .decaysTowardWeightsParent) }
    }

    public func validate() throws {
        guard (0..<1).contains(beta1) else { throw TrainingError.invalidConfiguration(field: "beta1", reason: "must be in [0, 1), got \(beta1)") }
        guard (0..<1).contains(beta2) else { throw TrainingError.invalidConfiguration(field: "beta2", reason: "must be in [0, 1), got \(beta2)") }
        guard epsilon > 0 else { throw TrainingError.invalidConfiguration(field: "epsilon", reason: "must be positive, got \(epsilon)") }
        guard weightDecay >= 0 else { throw TrainingError.invalidConfiguration(field: "weight decay", reason: "must not be negative, got \(weightDecay)") }
        if let norm = maxGradientNorm, !(norm > 0) {
            throw TrainingError.invalidConfiguration(field: "max gradient norm", reason: "must be positive, got \(norm)")
        }
    }

    /// The global L2 norm over every gradient tensor, accumulated in Double in tensor order.
    public static func globalNorm(_ gradients: [[Float]]) -> Double {
        var sum = 0.0
        for tensor in gradients {
            for g in tensor { sum += Double(g) * Double(g) }
        }
        return sum.squareRoot()
    }

    /// Scales `gradients` in place so their global norm is at most `maxNorm`; returns the norm before clipping.
    ///
    /// Same coefficient as PyTorch: `maxNorm / (norm + 1e-6)`, applied only when it is below 1.
    @discardableResult
    public static func clip(_ gradients: inout [[Float]], maxNorm: Double) -> Double {
        let norm = globalNorm(gradients)
        let coefficient = maxNorm / (norm + 1e-6)
        if coefficient < 1 {
            let c = Float(coefficient)
            for t in gradients.indices {
                gradients[t].withUnsafeMutableBufferPointer { g in
                    for i in g.indices { g[i] *= c }
                }
            }
        }
        return norm
    }

    /// One optimizer step: clips `gradients` (if configured), then updates `parameters` and `state` in place;
    /// the decay pulls toward `anchor` when given (a weights parent's tensors, laid out like `parameters`), else
    /// toward zero. Returns the gradient norm before clipping.
    @discardableResult
    public func step(parameters: inout NamedTensors, gradients: [[Float]], state: inout AdamWState,
                     learningRate: Double, anchor: NamedTensors? = nil) -> Double {
        precondition(gradients.count == parameters.count, "one gradient tensor per parameter tensor")
        precondition(state.firstMoment.hasLayout(of: parameters), "optimizer state does not match the parameters")
        precondition(anchor?.hasLayout(of: parameters) ?? true, "the decay's anchor does not match the parameters")
        var gradients = gradients
        let norm = maxGradientNorm.map { AdamW.clip(&gradients, maxNorm: $0) } ?? AdamW.globalNorm(gradients)

        state.step += 1
        let t = Double(state.step)
        let biasCorrection1 = 1 - pow(beta1, t)
        let biasCorrection2 = 1 - pow(beta2, t)
        // Scalars are computed in Double and rounded once to Float, as PyTorch does with Python floats.
        let decay = Float(1 - learningRate * weightDecay)
        // With an anchor the decay happened above; multiplying by 1 leaves every bit as it is.
        let decayTowardZero: Float = anchor == nil ? decay : 1
        let stepSize = Float(learningRate / biasCorrection1)
        let correction2Root = Float(biasCorrection2.squareRoot())
        let oneMinusB1 = Float(1 - beta1)
        let b2 = Float(beta2), oneMinusB2 = Float(1 - beta2)
        let eps = Float(epsilon)

        for t in 0..<parameters.count {
            precondition(gradients[t].count == parameters.values[t].count, "gradient \(parameters.names[t]) has the wrong size")
            if let anchor {
                anchor.values[t].withUnsafeBufferPointer { a in
                    parameters.values[t].withUnsafeMutableBufferPointer { p in
                        for i in 0..<p.count { p[i] = a[i] + (p[i] - a[i]) * decay }
                    }
                }
            }
            gradients[t].withUnsafeBufferPointer { g in
                parameters.values[t].withUnsafeMutableBufferPointer { p in
                    state.firstMoment.values[t].withUnsafeMutableBufferPointer { m in
                        state.secondMoment.values[t].withUnsafeMutableBufferPointer { v in
                            for i in 0..<p.count {
                                p[i] *= decayTowardZero
                                // m.lerp_(g, 1 − β1) and v·β2 + (1 − β2)·g·g, in PyTorch's operation order.
                                m[i] += oneMinusB1 * (g[i] - m[i])
                                v[i] = v[i] * b2 + oneMinusB2 * (g[i] * g[i])
                                let denominator = v[i].squareRoot() / correction2Root + eps
                                p[i] += -stepSize * (m[i] / denominator)
                            }
                        }
                    }
                }
            }
        }
        return norm
    }
}

/// Everything AdamW changes as it runs: the step count and both moments.
public struct AdamWState: Sendable, Equatable {
    /// Number of optimizer steps taken (t in the bias corrections).
    public var step: Int
    /// m: exponential moving average of the gradients, one tensor per parameter tensor.
    public var firstMoment: NamedTensors
    /// v: exponential moving average of the squared gradients.
    public var secondMoment: NamedTensors

    public init(step: Int, firstMoment: NamedTensors, secondMoment: NamedTensors) {
        self.step = step
        self.firstMoment = firstMoment
        self.secondMoment = secondMoment
    }

    /// The state before the first step: zero moments shaped like `parameters`.
    public static func initial(for parameters: NamedTensors) -> AdamWState {
        AdamWState(step: 0, firstMoment: .zeros(like: parameters), secondMoment: .zeros(like: parameters))
    }
}
