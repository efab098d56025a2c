/// `train.chat_format`: the turn format training and held-out scoring put examples in, when it is not the base
/// model's own chat template. The names are Model's `ChatConvention`s (Pipelines does not import Model; a Steps
/// test keeps the two lists equal).
public enum ChatFormat: String, Sendable, Codable, CaseIterable {
    case chatml, llama3, gemma, phi3
    /// Prompt and completion concatenated: a base model, which has no template.
    case plain
}
