import Adapters
import Model
/// The one thing the training loop needs from a model: a loss and its gradient for a batch.
///
/// Conventions (the loop relies on them to accumulate micro-batches and normalise once):
/// - `loss` is the **sum** over the batch of `weights[i] · (−log p(tokens[i+1] | tokens[...i]))`,
///   not a mean, and `weightSum` is the sum of those weights, so the mean over any set of micro-batches is
///   Σ loss / Σ weightSum;
/// - `gradients` holds ∂loss/∂θ for that same sum, one array per parameter tensor in parameter order;
/// - `step` counts micro-batches from the start of the run: it keys dropout and any other randomness, so
///   the same (parameters, batch, step) gives the same bits every time.
public protocol GradientSource: Sendable {
    /// Throws when the computation cannot run at all (the system refuses the threads it needs).
    func lossAndGradients(_ batch: [TrainingSequence], parameters: NamedTensors, step: UInt64) throws
        -> (loss: Double, weightSum: Double, gradients: [[Float]])

    /// Loss without gradients and without dropout, for held-out evaluation; same summing convention.
    func loss(_ batch: [TrainingSequence], parameters: NamedTensors) -> (loss: Double, weightSum: Double)
}
