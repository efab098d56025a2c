/// The LoRA training settings a run gets when it names none. The nightly pipeline's `train` section
/// (`Pipelines.TrainParameters`) and `adapt train` both read them from here, so the two cannot drift apart
/// again; `pipelines/nightly.json` spells them out and a test holds it equal.
///
/// Chosen from runs of the nightly pipeline on lineages of 20 to 300 examples (BENCHMARKS.md, "Training
/// defaults on small lineages"; docs/training.md says why these). A change here changes the digest of every
/// pipeline that leaves these keys out, for runs planned from then on; a run already planned keeps the
/// resolved values stored in its manifest and step inputs, so its replay is unchanged.
public enum TrainingDefaults {
    /// Optimizer steps: the most a night trains; early stopping usually ends it sooner.
    public static let steps = 100
    /// Peak AdamW learning rate (cosine schedule after the warm-up, down to a tenth of it).
    public static let learningRate = 5e-4
    /// Dropout on the LoRA input.
    public static let dropout = 0.05
    /// Sequences per micro-batch.
    public static let batchSize = 4
    public static let rank = 8
    /// LoRA scale numerator: the update is scaled by alpha / rank.
    public static let alpha = 16.0
    /// Early stopping measures its validation loss every this many optimizer steps…
    public static let earlyStoppingEvery = 10
    /// …and stops after this many measurements in a row without a new best, keeping the best weights.
    public static let earlyStoppingPatience = 3
    /// Linear warm-up steps of the default run.
    public static let warmupSteps = warmupSteps(forSteps: steps)

    /// The warm-up `adapt train` gives a run of `steps` steps (it has no warm-up option): a tenth of it.
    public static func warmupSteps(forSteps steps: Int) -> Int { max(1, steps / 10) }
}
