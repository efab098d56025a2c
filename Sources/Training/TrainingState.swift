import Adapters

/// One held-out evaluation: after which optimizer step, and the mean weighted loss.
public struct Evaluation: Sendable, Equatable, Codable {
    public var step: Int
    public var loss: Double

    public init(step: Int, loss: Double) {
        self.step = step
        self.loss = loss
    }
}

/// Everything a run changes as it trains: exactly what a checkpoint saves and a resume restores.
///
/// Nothing here depends on wall time, so two runs in the same state continue identically.
public struct TrainingState: Sendable, Equatable {
    public var parameters: NamedTensors
    public var optimizer: AdamWState
    /// Where the next micro-batch starts.
    public var cursor: DataCursor
    /// Micro-batches consumed so far: the step counter of the dropout stream.
    public var microStep: UInt64
    /// Mean weighted training loss of every optimizer step, in order.
    public var losses: [Double]
    /// Tokens fed through the model so far (all positions of every sequence).
    public var tokens: Int
    /// Held-out evaluations so far.
    public var evaluations: [Evaluation]
    /// The parameters at the best held-out loss (nil until the first evaluation).
    public var best: NamedTensors?
    /// The evaluation `best` came from.
    public var bestEvaluation: Evaluation?
    /// Evaluations in a row that did not improve on `bestEvaluation`.
    public var staleEvaluations: Int
    /// True once early stopping ended the run.
    public var stoppedEarly: Bool

    public init(parameters: NamedTensors, optimizer: AdamWState, cursor: DataCursor = DataCursor(),
                microStep: UInt64 = 0, losses: [Double] = [], tokens: Int = 0, evaluations: [Evaluation] = [],
                best: NamedTensors? = nil, bestEvaluation: Evaluation? = nil, staleEvaluations: Int = 0,
                stoppedEarly: Bool = false) {
        self.parameters = parameters
        self.optimizer = optimizer
        self.cursor = cursor
        self.microStep = microStep
        self.losses = losses
        self.tokens = tokens
        self.evaluations = evaluations
        self.best = best
        self.bestEvaluation = bestEvaluation
        self.staleEvaluations = staleEvaluations
        self.stoppedEarly = stoppedEarly
    }

    /// A run that has not taken a step: `initial` parameters and zero optimizer moments.
    public static func fresh(_ initial: NamedTensors) -> TrainingState {
        TrainingState(parameters: initial, optimizer: .initial(for: initial))
    }

    /// Optimizer steps taken.
    public var step: Int { optimizer.step }

    /// The weights a run hands out: the best held-out ones when there were evaluations, else the latest.
    public var result: NamedTensors { best ?? parameters }

    /// True when no step improved on the starting weights' held-out loss (evaluated at step 0), so `result` is them.
    public var keptStartingWeights: Bool { bestEvaluation?.step == 0 }

    /// Bitwise equality of every float (see `NamedTensors.bitwiseEqual`) and equality of everything else.
    public func bitwiseEqual(_ other: TrainingState) -> Bool {
        func same(_ a: NamedTensors?, _ b: NamedTensors?) -> Bool {
            switch (a, b) {
            case (nil, nil): return true
            case let (x?, y?): return x.bitwiseEqual(y)
            default: return false
            }
        }
        return parameters.bitwiseEqual(other.parameters)
            && optimizer.step == other.optimizer.step
            && optimizer.firstMoment.bitwiseEqual(other.optimizer.firstMoment)
            && optimizer.secondMoment.bitwiseEqual(other.optimizer.secondMoment)
            && cursor == other.cursor && microStep == other.microStep
            && losses.map(\.bitPattern) == other.losses.map(\.bitPattern)
            && tokens == other.tokens
            && evaluations.map(\.loss.bitPattern) == other.evaluations.map(\.loss.bitPattern)
            && evaluations.map(\.step) == other.evaluations.map(\.step)
            && same(best, other.best) && bestEvaluation == other.bestEvaluation
            && staleEvaluations == other.staleEvaluations && stoppedEarly == other.stoppedEarly
    }
}
