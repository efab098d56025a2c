/// What one `generate` call is asked to do besides sampling.
public struct GenerationOptions: Sendable, Equatable {
    public var sampling = SamplingOptions()
    /// The most tokens to generate (the end-of-generation token is not counted).
    public var maxTokens = 256
    /// Generation ends when the text contains one of these; the stop string and what follows are not shown.
    public var stopStrings: [String] = []
    /// Passed to the chat formatter (the `enable_thinking` switch of some templates).
    public var enableThinking = false

    public init(sampling: SamplingOptions = SamplingOptions(), maxTokens: Int = 256, stopStrings: [String] = [],
                enableThinking: Bool = false) {
        self.sampling = sampling
        self.maxTokens = maxTokens
        self.stopStrings = stopStrings
        self.enableThinking = enableThinking
    }
}

/// Why a generation ended.
public enum FinishReason: String, Sendable, Equatable {
    /// The model produced an end-of-text or end-of-turn token.
    case endOfGeneration = "eos"
    case stopString = "stop"
    case maxTokens = "length"
    /// The context window is full.
    case contextFull = "context"
    /// `stop()` was called or the task was cancelled.
    case stopped = "stopped"
}

/// The text of one generation and what it cost.
public struct GenerationResult: Sendable, Equatable {
    /// Everything shown through `onText`, joined: stop strings trimmed, end-of-generation token not included.
    public var text: String
    /// Every sampled token except the end-of-generation one (tokens spelling a stop string included).
    public var tokenIDs: [Int32]
    public var finishReason: FinishReason
    /// Tokens in the formatted prompt.
    public var promptTokens: Int
    /// Prompt tokens whose keys and values were already cached from the previous call (not processed again).
    public var cachedTokens: Int
    public var generatedTokens: Int { tokenIDs.count }
    /// Time to process the uncached part of the prompt.
    public var promptMilliseconds: Double
    /// Time from the end of prompt processing to the end: sampling and one forward pass per token.
    public var generationMilliseconds: Double
    /// What was attached while generating.
    public var model: AttachedModel

    /// Generated tokens per second of generation time (0 when nothing was generated).
    public var tokensPerSecond: Double {
        generationMilliseconds > 0 ? Double(generatedTokens) / (generationMilliseconds / 1000) : 0
    }

    /// Prompt tokens processed per second (cached ones excluded).
    public var promptTokensPerSecond: Double {
        promptMilliseconds > 0 ? Double(promptTokens - cachedTokens) / (promptMilliseconds / 1000) : 0
    }
}
