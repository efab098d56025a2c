import AdaptCore
import Foundation
import Steps

/// The base model `enqueue nightly` names, looked up before the state's database is opened: a command refused
/// for a missing model leaves no new state behind. The enqueue checks the file in full afterwards.
public enum NightlyModelCheck {
    /// Throws `StepError.modelNotFound` unless `model` is a file, or a name in `state`'s models/.
    public static func requireModel(_ model: String, in state: StateDirectory) throws {
        _ = try StepEnvironment.modelURL(model, in: state)
    }
}
