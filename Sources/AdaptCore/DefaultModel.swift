import Foundation

/// The model a night personalises when nobody names one: what `scripts/fetch-model` puts in the state's
/// `models/` folder. Every command's default and help text read it from here.
public enum DefaultModel {
    public static let fileName = "SmolLM2-135M-Instruct.Q4_1.gguf"
}

extension StateDirectory {
    /// Where the default model lives in this state directory.
    public var defaultModel: URL { models.appendingPathComponent(DefaultModel.fileName) }
}
