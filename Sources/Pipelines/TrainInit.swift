/// `train.init`: what a night's candidate starts from.
///
/// `active` (the default) starts from the lineage's active version when its adapter fits the run (same base model,
/// chat template, rank, alpha and targets), so what earlier nights taught carries over once their examples are
/// spent; with no active version, or one that does not fit, the candidate trains from zero and the train step says
/// why. `fresh` always trains from zero, as every run planned before the field did: a step input without it reads
/// as `fresh`, so those runs replay as recorded.
public enum TrainInit: String, Sendable, Codable, CaseIterable {
    case active, fresh

    /// The field of the sample step's input that carries the choice: the sample step fixes the weights parent.
    public static let sampleField = "train_init"
}
