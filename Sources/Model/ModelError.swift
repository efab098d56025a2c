import Foundation

/// Everything that can go wrong reading, writing or running a model.
///
/// Descriptions name the offending value and the way out; they never contain a user's text (tensor and
/// metadata names come from the model file, not from a person).
public enum ModelError: Error, Equatable, CustomStringConvertible {
    case fileUnreadable(path: String, reason: String)
    case fileUnwritable(path: String, reason: String)
    /// The file ends before a field that starts at `offset` and needs `need` bytes.
    case truncated(offset: Int, need: Int)
    case badMagic(UInt32)
    case unsupportedVersion(UInt32)
    case unknownValueType(key: String, type: UInt32)
    case invalidString(offset: Int)
    case countTooLarge(what: String, count: UInt64, offset: Int)
    /// The metadata's arrays hold more elements than a model needs (`limit` over all arrays).
    case metadataTooLarge(key: String, count: Int, limit: Int)
    case badAlignment(UInt64)
    case duplicateKey(String)
    case duplicateTensor(String)
    case unsupportedTensorType(name: String, type: UInt32)
    case badTensorShape(name: String, reason: String)
    case tensorOutOfBounds(name: String)
    case missingMetadata(key: String)
    case missingTensor(name: String)
    case unsupportedArchitecture(String)
    case invalidHyperparameters(reason: String)
    /// A metadata number that must be a positive finite f32 is not.
    case invalidMetadataValue(key: String, value: Double)
    case tensorShapeMismatch(name: String, expected: [Int], actual: [Int])
    /// `key` (the tokenizer's token list or `llama.vocab_size`) counts `count` tokens, the embedding has other rows.
    case vocabularyMismatch(key: String, count: Int, embeddingRows: Int)
    case invalidToken(id: Int, vocabulary: Int)
    /// `what` ("the prompt is") counts more tokens than the model's context holds.
    case contextExceeded(what: String, tokens: Int, contextLength: Int)
    /// The system started only `started` of the `requested` threads of a training pass (the caller counts as one).
    case threadsUnavailable(requested: Int, started: Int, reason: String)
    case tooManyThreads(requested: Int, maximum: Int)
    /// A forward pass gave NaN or an infinity.
    case nonFiniteOutput
    case unsupportedTokenizer(model: String)
    case unsupportedPreTokenizer(String)
    case invalidVocabulary(reason: String)
    case unknownChatTemplate(digest: String)
    /// The file has no `tokenizer.chat_template` and no chat format was named.
    case noChatTemplate
    case unsupportedChatTemplate(convention: String, feature: String)
    case chatConventionMissingToken(convention: String, token: String)
    case invalidChatMessages(reason: String)
    /// LoRA targets that do not fit how `architecture` stores its projections (fused or apart).
    case unsupportedTargets(architecture: String, reason: String)

    public var description: String {
        switch self {
        case let .fileUnreadable(path, reason):
            return "cannot read model file \(path): \(reason); check the path (scripts/fetch-model fetches the default model)"
        case let .fileUnwritable(path, reason):
            return "cannot write \(path): \(reason); check that the directory exists and is writable"
        case let .truncated(offset, need):
            return "GGUF file is truncated: a field at byte \(offset) needs \(need) more bytes; the download is incomplete, fetch the model again"
        case let .badMagic(magic):
            return "not a GGUF file (magic 0x\(String(magic, radix: 16)), expected 0x46554747 \"GGUF\"); pass a .gguf model file"
        case let .unsupportedVersion(version):
            return "GGUF version \(version) is not supported (versions 2 and 3 are); convert the model with a current llama.cpp"
        case let .unknownValueType(key, type):
            return "GGUF metadata key \(key) has unknown value type \(type); the file is corrupt or from a newer GGUF revision"
        case let .invalidString(offset):
            return "GGUF string at byte \(offset) is not valid UTF-8; the file is corrupt"
        case let .countTooLarge(what, count, offset):
            return "GGUF \(what) at byte \(offset) is \(count), more than the file can hold; the file is corrupt"
        case let .metadataTooLarge(key, count, limit):
            return "GGUF metadata array \(key) has \(count) elements, more than the \(limit) all arrays of a model's metadata may hold together; the file is corrupt or not a language model"
        case let .badAlignment(value):
            return "GGUF general.alignment is \(value), expected a power of two; the file is corrupt"
        case let .duplicateKey(key):
            return "GGUF metadata key \(key) appears twice; the file is corrupt"
        case let .duplicateTensor(name):
            return "GGUF tensor \(name) appears twice; the file is corrupt"
        case let .unsupportedTensorType(name, type):
            return "tensor \(name) has GGML type \(GGMLType.label(ofRawType: type)), which this reader cannot dequantize (supported: \(GGMLType.supportedNames)); re-quantize the model to one of those (llama.cpp's llama-quantize --allow-requantize), or pick a file in one"
        case let .badTensorShape(name, reason):
            return "tensor \(name) has an invalid shape: \(reason); the file is corrupt"
        case let .tensorOutOfBounds(name):
            return "tensor \(name) extends past the end of the file; the file is truncated, fetch the model again"
        case let .missingMetadata(key):
            return "the model has no metadata key \(key); it is not a complete GGUF of its architecture"
        case let .missingTensor(name):
            return "the model has no tensor \(name); it is not a complete GGUF of its architecture"
        case let .unsupportedArchitecture(arch):
            return "model architecture \(arch) is not supported (supported: \(Architecture.supportedNames.joined(separator: ", "))); pick a GGUF of one of those"
        case let .invalidHyperparameters(reason):
            return "the model's hyperparameters are inconsistent: \(reason)"
        case let .invalidMetadataValue(key, value):
            return "the model's \(key) is \(value), but it must be a positive finite number; the file is corrupt, fetch or convert the model again"
        case let .tensorShapeMismatch(name, expected, actual):
            return "tensor \(name) has shape \(actual), expected \(expected); the file does not match its own metadata"
        case let .vocabularyMismatch(key, count, rows):
            return "the model's \(key) counts \(count) tokens but its token embedding has \(rows) rows; the two must agree, so the file is corrupt or was converted wrongly: convert the model again with a current llama.cpp"
        case let .contextExceeded(what, tokens, contextLength):
            return "\(what) \(tokens) tokens but the model's context holds \(contextLength); shorten it"
        case let .threadsUnavailable(requested, started, reason):
            return "the system started only \(started) of the \(requested) threads asked for (\(reason)); pass fewer --threads or raise the memory or process limit"
        case let .tooManyThreads(requested, maximum):
            return "\(requested) threads asked for, but this build of OpenBLAS runs at most \(maximum); ask for \(maximum) or fewer"
        case .nonFiniteOutput:
            return "the model produced non-finite values; its weights may be corrupt, fetch the model again"
        case let .invalidToken(id, vocabulary):
            return "token id \(id) is outside the vocabulary of \(vocabulary) tokens"
        case let .unsupportedTokenizer(model):
            return "tokenizer model \(model) is not supported (\(TokenizerKind.allCases.map(\.rawValue).joined(separator: " and ")), byte-level BPE and SentencePiece, are); pick a model whose tokenizer.ggml.model is one of those"
        case let .unsupportedPreTokenizer(name):
            return "pre-tokenizer \(name) is not supported (gpt2, smollm, llama-bpe, qwen2 and their aliases are); pick a model that uses one of those"
        case let .invalidVocabulary(reason):
            return "the tokenizer vocabulary is invalid: \(reason); the model file is corrupt or was converted wrongly"
        case let .unknownChatTemplate(digest):
            return "the model's chat template (sha256 \(digest.prefix(12))) is not a known convention (\(ChatConvention.templateNames)); name one with --chat-format (\"chat_format\" in a pipeline file's train section) or use a model with one of those templates"
        case .noChatTemplate:
            return "the model has no chat template (tokenizer.chat_template), as a base model has none; pass --chat-format plain to train and prompt it on prompt and completion concatenated (in a pipeline file: \"train\": {\"chat_format\": \"plain\"}), or another convention by name (\(ChatConvention.allCases.map(\.rawValue).joined(separator: ", ")))"
        case let .unsupportedChatTemplate(convention, feature):
            return "the model's \(convention) chat template adds \(feature), which the formatter does not reproduce; pass --chat-format \(convention) for the plain turn format, knowing prompts will differ from the template's"
        case let .chatConventionMissingToken(convention, token):
            return "the \(convention) chat convention needs the token \(token), which this vocabulary lacks; pick the convention that matches the model"
        case let .invalidChatMessages(reason):
            return "the chat messages cannot be formatted: \(reason)"
        case let .unsupportedTargets(architecture, reason):
            return "\(architecture) cannot take these LoRA targets: \(reason)"
        }
    }
}
