import Pipelines
import ReplayBuffer

/// What the sample step drew: the training and held-out snapshot blobs and their sizes. It is ReplayBuffer's
/// report of the draw, written as it is.
public typealias SampleOutput = SampleReport

extension SampleReport: StepResult {
    public static let kind = StepKind.sample
}
