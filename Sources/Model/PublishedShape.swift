/// The shape of a published model: what a random-weight file of the same size needs to run at that model's
/// speed. Benchmarks run on such files where the real one cannot be fetched (`adapt model synth`): how fast a
/// pass runs depends on the sizes and types of the tensors, never on the values they hold.
///
/// The numbers are those of each model's `config.json` on Hugging Face (cited in docs/model.md, checked by
/// `PublishedShapeTests`), in llama.cpp's GGUF terms: `block_count` = num_hidden_layers, `embedding_length` =
/// hidden_size, `feed_forward_length` = intermediate_size, `attention.head_count(_kv)` =
/// num_attention_heads (num_key_value_heads), `attention.key_length` = head_dim, `rope.freq_base` = rope_theta,
/// `attention.layer_norm_rms_epsilon` = rms_norm_eps, `context_length` = max_position_embeddings. All four tie
/// the output projection to the token embedding (tie_word_embeddings), so the files have no `output.weight`.
public struct PublishedShape: Sendable, Equatable {
    /// The name `adapt model synth --shape` takes.
    public var name: String
    /// The Hugging Face repository whose config.json the numbers are from.
    public var source: String
    /// `general.architecture` (its traits, such as qwen2's q/k/v biases, come with it: `Architecture`).
    public var architecture: String
    public var blockCount: Int
    public var width: Int
    public var ffnWidth: Int
    public var headCount: Int
    public var kvHeadCount: Int
    public var headDimension: Int
    public var vocabularySize: Int
    public var contextLength: Int
    public var ropeBase: Float
    public var rmsEpsilon: Float
    /// Gemma 3's `sliding_window` (its blocks' pattern of five local to one global is the architecture's).
    public var slidingWindow: Int? = nil
    /// Llama 3.x's `rope_scaling` of type llama3, written as `rope_freqs.weight` the way llama.cpp's converter does.
    public var llama3RopeScaling: Llama3RopeScaling? = nil
    /// `tokenizer.ggml.pre` of the family's real files, where the engine and llama.cpp share a rule for it; the
    /// vocabulary itself is a synthetic byte-level BPE one of `vocabularySize` tokens.
    public var preTokenizer: String

    /// `rope_scaling` {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}.
    public struct Llama3RopeScaling: Sendable, Equatable {
        public var factor: Double
        public var lowFrequencyFactor: Double
        public var highFrequencyFactor: Double
        public var originalContextLength: Double

        public init(factor: Double, lowFrequencyFactor: Double, highFrequencyFactor: Double, originalContextLength: Double) {
            self.factor = factor
            self.lowFrequencyFactor = lowFrequencyFactor
            self.highFrequencyFactor = highFrequencyFactor
            self.originalContextLength = originalContextLength
        }
    }

    /// Whether the width is split evenly among the heads (then the file needs no `attention.key_length`).
    public var headDimensionIsWidthOverHeads: Bool { width == headCount * headDimension }

    /// Weights of the file: embedding (tied, so counted once), projections, biases and norms.
    public var parameterCount: Int {
        let family = (try? Architecture.named(architecture)) ?? Architecture.supported[0]
        let q = headCount * headDimension, kv = kvHeadCount * headDimension
        var block = width * (q + 2 * kv) + q * width + 3 * width * ffnWidth + 2 * width
        if family.projectionBiases { block += q + 2 * kv }
        if family.queryKeyNorm { block += 2 * headDimension }
        if family.postNorms { block += 2 * width }
        return vocabularySize * width + width + blockCount * block
    }

    public static let qwen25_05B = PublishedShape(
        name: "qwen2.5-0.5b", source: "Qwen/Qwen2.5-0.5B-Instruct", architecture: "qwen2", blockCount: 24, width: 896,
        ffnWidth: 4864, headCount: 14, kvHeadCount: 2, headDimension: 64, vocabularySize: 151_936, contextLength: 32768,
        ropeBase: 1_000_000, rmsEpsilon: 1e-6, preTokenizer: "qwen2")

    public static let llama32_1B = PublishedShape(
        name: "llama3.2-1b", source: "meta-llama/Llama-3.2-1B-Instruct", architecture: "llama", blockCount: 16, width: 2048,
        ffnWidth: 8192, headCount: 32, kvHeadCount: 8, headDimension: 64, vocabularySize: 128_256, contextLength: 131_072,
        ropeBase: 500_000, rmsEpsilon: 1e-5,
        llama3RopeScaling: Llama3RopeScaling(factor: 32, lowFrequencyFactor: 1, highFrequencyFactor: 4, originalContextLength: 8192),
        preTokenizer: "llama-bpe")

    public static let gemma3_1B = PublishedShape(
        name: "gemma3-1b", source: "google/gemma-3-1b-it", architecture: "gemma3", blockCount: 26, width: 1152,
        ffnWidth: 6912, headCount: 4, kvHeadCount: 1, headDimension: 256, vocabularySize: 262_144, contextLength: 32768,
        ropeBase: 1_000_000, rmsEpsilon: 1e-6, slidingWindow: 512, preTokenizer: "gpt-2")

    public static let qwen3_17B = PublishedShape(
        name: "qwen3-1.7b", source: "Qwen/Qwen3-1.7B", architecture: "qwen3", blockCount: 28, width: 2048,
        ffnWidth: 6144, headCount: 16, kvHeadCount: 8, headDimension: 128, vocabularySize: 151_936, contextLength: 40960,
        ropeBase: 1_000_000, rmsEpsilon: 1e-6, preTokenizer: "qwen2")

    /// The shapes `adapt model synth` writes, smallest first.
    public static let all: [PublishedShape] = [qwen25_05B, llama32_1B, gemma3_1B, qwen3_17B]

    public static var names: [String] { all.map(\.name) }

    public static func named(_ name: String) -> PublishedShape? { all.first { $0.name == name } }
}
