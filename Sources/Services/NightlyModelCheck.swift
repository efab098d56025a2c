import AdaptCore
import Foundation
import Steps

/// The base model `enqueue nightly` names, looked up before the state's database is opened: a command refused
/// for a missing model leaves no new state behind. The enqueue checks the file in full afterwards.
public enum NightlyModelCheck {
    /// Throws `StepError.modelNotFound` unless `model` is a file, or a name in `state`'s models/; `notAModel` unless
    /// it starts as a GGUF file does; and
    /// `UnbundlableModelName` when its file name is one a run bundle could not carry (replay looks the name up in
    /// a models directory, so it must be a plain file name), so no run is recorded that could not be replayed.
    public static func requireModel(_ model: String, in state: StateDirectory) throws {
        let url = try StepEnvironment.modelURL(model, in: state)
        try NightlyRun.requireGGUF(url, name: model)
        if let problem = PlainFileName.problem(url.lastPathComponent) {
            throw UnbundlableModelName(problem: problem)
        }
    }
}

/// A base model whose file name a run bundle could not carry.
public struct UnbundlableModelName: Error, CustomStringConvertible {
    let problem: String
    public var description: String {
        "the base model's file name \(problem), so a bundle of the run could not name it for replay; "
            + "rename the file (letters, digits, '-', '_' and '.') and pass the new name with --model"
    }
}
