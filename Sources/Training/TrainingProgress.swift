import Foundation

/// What the training loop reports as it runs: values for a callback, never printed by the loop itself.
public enum TrainingEvent: Sendable, Equatable {
    /// The run continues from a checkpoint; `warnings` name newer checkpoints that were unusable.
    case resumed(step: Int, checkpoint: String, warnings: [String])
    /// One optimizer step finished.
    case step(StepProgress)
    /// A held-out evaluation finished; `best` is true when it improved on every earlier one.
    case evaluated(step: Int, loss: Double, best: Bool)
    /// A checkpoint was written: its size and the wall time encoding and writing it took.
    case checkpointWritten(step: Int, name: String, bytes: Int, seconds: Double)
    /// Early stopping ended the run; the weights of `bestStep` are the result.
    case stoppedEarly(step: Int, bestStep: Int, bestLoss: Double)
}

/// The figures of one optimizer step, as a progress line shows them.
public struct StepProgress: Sendable, Equatable {
    public var step: Int
    public var totalSteps: Int
    /// Mean weighted loss of this step's batch.
    public var loss: Double
    /// Bias-corrected exponential moving average of the losses so far (β = 0.9); a function of the loss
    /// history alone, so it is the same after a resume.
    public var smoothedLoss: Double
    public var learningRate: Double
    /// Global gradient norm before clipping.
    public var gradientNorm: Double
    /// Tokens per second since this process started (or resumed) the run.
    public var tokensPerSecond: Double
    public var elapsedSeconds: Double
    /// Seconds left at the current speed; nil until a step has taken measurable time.
    public var etaSeconds: Double?

    public init(step: Int, totalSteps: Int, loss: Double, smoothedLoss: Double, learningRate: Double,
                gradientNorm: Double, tokensPerSecond: Double, elapsedSeconds: Double, etaSeconds: Double?) {
        self.step = step
        self.totalSteps = totalSteps
        self.loss = loss
        self.smoothedLoss = smoothedLoss
        self.learningRate = learningRate
        self.gradientNorm = gradientNorm
        self.tokensPerSecond = tokensPerSecond
        self.elapsedSeconds = elapsedSeconds
        self.etaSeconds = etaSeconds
    }

    /// The debiased exponential moving average (β = 0.9) of `losses`.
    public static func smoothed(_ losses: [Double]) -> Double {
        let beta = 0.9
        var average = 0.0
        for loss in losses { average = beta * average + (1 - beta) * loss }
        return losses.isEmpty ? .nan : average / (1 - pow(beta, Double(losses.count)))
    }
}
