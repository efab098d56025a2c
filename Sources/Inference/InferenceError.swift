import AdaptCore

/// Everything that can go wrong while generating; each description names the value and the way out.
public enum InferenceError: Error, Equatable, CustomStringConvertible {
    case invalidOption(name: String, value: String, expected: String)
    /// The adapter was trained on another base model file.
    case adapterForAnotherModel(adapter: String, expected: Digest, actual: Digest)
    /// The adapter was trained with prompts formatted under another chat convention.
    case adapterForAnotherConvention(adapter: String, expected: String, actual: String)
    /// The adapter's tensors do not fit the model (rank, names or shapes).
    case adapterShapeMismatch(adapter: String, reason: String)
    /// `reload()` was called on a session that was not attached to a lineage.
    case noLineageAttached
    case promptTooLong(tokens: Int, contextLength: Int)
    case emptyPrompt
    case tokenOutOfVocabulary(id: Int32, vocabularySize: Int)
    case model(reason: String)

    public var description: String {
        switch self {
        case let .invalidOption(name, value, expected):
            return "--\(name) \(value) is out of range; use \(expected)"
        case let .adapterForAnotherModel(adapter, expected, actual):
            return "adapter \(adapter) was trained on base model \(actual.short), but this session runs \(expected.short); "
                + "load the model it was made for or train a new adapter on this one"
        case let .adapterForAnotherConvention(adapter, expected, actual):
            return "adapter \(adapter) was trained with the '\(actual)' chat convention, but this session formats prompts as "
                + "'\(expected)'; use a matching chat template or retrain the adapter"
        case let .adapterShapeMismatch(adapter, reason):
            return "adapter \(adapter) does not fit this model: \(reason); it was made for a different architecture"
        case .noLineageAttached:
            return "this session follows no lineage, so there is nothing to reload; attach one with --lineage"
        case let .promptTooLong(tokens, contextLength):
            return "the prompt is \(tokens) tokens but the model's context holds \(contextLength); shorten it"
        case .emptyPrompt:
            return "the prompt formats to no tokens at all; give a prompt or a chat message"
        case let .tokenOutOfVocabulary(id, vocabularySize):
            return "token id \(id) is outside the vocabulary of \(vocabularySize); the tokenizer and model do not match"
        case let .model(reason):
            return "the model failed: \(reason)"
        }
    }
}
