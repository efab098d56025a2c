import AdaptCore
import Foundation

/// A model with random weights, written as a real GGUF file: tiny by default, so every test in the project can
/// load, tokenize, run and train a model in milliseconds, or of a published model's shape
/// (`init(seed:shape:)`), so benchmarks run at that model's speed.
///
/// Its vocabulary is a genuine byte-level BPE vocabulary: the ChatML control tokens, all 256 byte symbols in
/// GPT-2's byte-to-unicode order (the order SmolLM2's vocabulary uses), and a list of English merges whose
/// parts always precede them, so any text tokenizes; `vocabularySize` extends it with synthetic merges to a
/// published size. Weights are drawn from `CounterRNG(seed)` (purpose `.test`, step = tensor index, index =
/// the value's flat position), so one seed always writes the same bytes; they are made while the file is
/// written, a chunk at a time, so a file of a billion weights never sits in memory.
public struct TinyModel: Sendable {
    public var seed: UInt64
    public var blockCount = 2
    public var width = 64
    public var headCount = 4
    public var kvHeadCount = 2
    public var ffnWidth = 128
    public var contextLength = 256
    public var ropeBase: Float = 10000
    public var rmsEpsilon: Float = 1e-5
    /// Storage type of the projection matrices (norms are always F32, as in llama.cpp's quantized files).
    public var weightType: GGMLType = .f32
    /// Storage type of `token_embd.weight`.
    public var embeddingType: GGMLType = .f32
    /// Writes a separate `output.weight`; by default the output is tied to the embedding, as in SmolLM2.
    public var separateOutput = false
    /// `general.architecture`: the tensors and keys its family adds are written too (`Architecture`).
    public var architecture = "llama"
    /// Writes `attention.key_length`: a head size other than width / heads (as Qwen3 and Gemma 3 have).
    public var headDimension: Int? = nil
    /// Writes `rope_freqs.weight` (one divisor per rotated pair), as the converter does for Llama 3.x.
    public var ropeFrequencyFactors: [Float]? = nil
    /// Writes `rope.scaling.type linear` with this factor.
    public var linearRopeScaling: Float? = nil
    /// Writes `attention.sliding_window`.
    public var slidingWindow: Int? = nil
    /// Control tokens appended to the vocabulary (phi3: its turn tags and <unk>, <s>, </s>, which llama.cpp
    /// looks up by text for that family).
    public var extraControlTokens: [String] = []
    /// `tokenizer.chat_template`; nil writes none, as a base model has none (`--chat-format plain` then).
    public var template: String? = TinyModel.chatTemplate
    /// The number of tokens, control tokens included; nil keeps the built-in vocabulary (`vocabulary`).
    public var vocabularySize: Int? = nil
    /// `tokenizer.ggml.pre`.
    public var preTokenizer = "smollm"
    /// `general.name`; nil: tiny-random-<architecture>.
    public var name: String? = nil

    public static let systemLine = "You are a tiny test model."
    public static let specialTokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

    /// ChatML, with a default system line when the conversation has none (SmolLM2's template, shortened).
    public static let chatTemplate = """
        {% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
        \(systemLine)<|im_end|>
        ' }}{% endif %}{{'<|im_start|>' + message['role'] + '
        ' + message['content'] + '<|im_end|>' + '
        '}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
        ' }}{% endif %}
        """

    /// Merges in rank order; each side is a byte symbol or the result of an earlier merge ("Ġ" is the space).
    public static let merges: [String] = [
        "Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t", "Ġ w", "Ġ o", "e n", "Ġ c",
        "i t", "i s", "a n", "o r", "e s", "Ġ b", "e d", "Ġ f", "in g", "Ġ p", "o u", "Ġa n", "a l", "a r",
        "Ġt o", "Ġ m", "Ġo f", "Ġ in", "Ġ d", "Ġ h", "Ġan d", "i c", "a s", "l e", "Ġt h", "i on", "o m",
        "l l", "en t", "Ġ n", "Ġ l", "s t", "Ġ re", "v e", "Ġ e", "r o", "l y", "Ġb e", "Ġ g", "Ġ T", "c t",
        "Ġ y", "Ġw h", "Ġ I", "Ġ Ġ", "ĠĠ ĠĠ", "Ċ Ċ", "Ġo n", "Ġy ou", "o w", "a y", "Ġs t", "Ġ u",
        "Ġ 1", "Ġ 2", "1 2", "0 0", "e l", "l o", "el lo", "h ello", "Ġh ello", "l d", "Ġw or", "Ġwor ld",
        "s s", "Ġc l", "Ġ is", "Ġ it",
    ]

    public init(seed: UInt64 = 0) { self.seed = seed }

    /// The variants `init(seed:variant:)` writes: one per supported architecture, and llama with Llama 3's RoPE.
    public static let variants = ["llama", "llama3-rope", "qwen2", "qwen3", "gemma3", "phi3"]

    /// The tiny model of one variant, with its family's traits: qwen2 adds q/k/v biases, qwen3 per-head q/k
    /// norms and a head size (24) that is not width / heads; `llama3-rope` is llama with Llama 3's frequency
    /// factors (1 for high frequencies, 8 for low ones, smooth between, as the converter computes them); gemma3
    /// has six blocks (five with a sliding window of 8 positions, then a global one with base 10⁶ and linear
    /// scaling by 2), head size 24, post norms and GELU; phi3 fuses qkv and gate/up and has its own output.
    public init(seed: UInt64 = 0, variant: String) {
        precondition(Self.variants.contains(variant), "unknown tiny model variant \(variant)")
        self.seed = seed
        architecture = variant == "llama3-rope" ? "llama" : variant
        if variant == "qwen3" { headDimension = 24 }
        if variant == "phi3" {
            separateOutput = true
            extraControlTokens = ["<|end|>", "<|user|>", "<|assistant|>", "<|system|>", "<unk>", "<s>", "</s>"]
        }
        if variant == "gemma3" {
            headDimension = 24
            blockCount = 6
            slidingWindow = 8
            ropeBase = 1_000_000
            linearRopeScaling = 2
            rmsEpsilon = 1e-6
        }
        if variant == "llama3-rope" { ropeFrequencyFactors = Self.llama3FrequencyFactors(rotated: width / headCount, base: ropeBase) }
    }

    /// A model of a published shape (`PublishedShape`): its sizes, RoPE, norm ε, sliding window and Llama 3
    /// frequency factors, a vocabulary of its size, and every matrix (the embedding included) stored as F16,
    /// the norms as F32, as llama.cpp's converter writes an F16 file. `blocks` and `vocabulary` override the
    /// shape's block count and vocabulary size (a small file of the same block shapes, for tests).
    public init(seed: UInt64 = 0, shape: PublishedShape, blocks: Int? = nil, vocabulary: Int? = nil) {
        self.seed = seed
        architecture = shape.architecture
        name = "synthetic-\(shape.name)"
        blockCount = blocks ?? shape.blockCount
        width = shape.width
        ffnWidth = shape.ffnWidth
        headCount = shape.headCount
        kvHeadCount = shape.kvHeadCount
        headDimension = shape.headDimensionIsWidthOverHeads ? nil : shape.headDimension
        contextLength = shape.contextLength
        ropeBase = shape.ropeBase
        rmsEpsilon = shape.rmsEpsilon
        slidingWindow = shape.slidingWindow
        if let s = shape.llama3RopeScaling {
            ropeFrequencyFactors = Self.llama3FrequencyFactors(
                rotated: shape.headDimension, base: shape.ropeBase, factor: s.factor, low: s.lowFrequencyFactor,
                high: s.highFrequencyFactor, original: s.originalContextLength)
        }
        vocabularySize = vocabulary ?? shape.vocabularySize
        preTokenizer = shape.preTokenizer
        weightType = .f16
        embeddingType = .f16
    }

    /// Llama 3.1's rope_scaling (factor 8, low_freq_factor 1, high_freq_factor 4) with an original context of
    /// 64 positions instead of 8192 by default, so that a head of 16 dimensions has pairs of all three kinds;
    /// the divisors llama.cpp's converter writes to `rope_freqs.weight` for those parameters.
    public static func llama3FrequencyFactors(rotated: Int, base: Float, factor: Double = 8, low: Double = 1, high: Double = 4,
                                              original: Double = 64) -> [Float] {
        return (0..<(rotated / 2)).map { i in
            let wavelength = 2 * Double.pi / pow(Double(base), -Double(2 * i) / Double(rotated))
            if wavelength < original / high { return 1 }
            if wavelength > original / low { return Float(factor) }
            let smooth = (original / wavelength - low) / (high - low)
            return Float(1 / ((1 - smooth) / factor + smooth))
        }
    }

    /// GPT-2's reversible byte → unicode mapping: printable Latin-1 bytes stand for themselves, the others
    /// are shifted to U+0100 and up, in byte order.
    public static let byteSymbols: [String] = {
        let printable = Array(33...126) + Array(161...172) + Array(174...255)
        var symbol = [Int](repeating: 0, count: 256)
        for b in printable { symbol[b] = b }
        var next = 256
        for b in 0..<256 where !printable.contains(b) { symbol[b] = next; next += 1 }
        let order = printable + (0..<256).filter { !printable.contains($0) }
        return order.map { String(UnicodeScalar(UInt32(symbol[$0]))!) }
    }()

    /// Tokens in id order and their GGUF token types (3 = control, 1 = normal).
    public static var vocabulary: (tokens: [String], types: [Int32]) {
        var tokens = specialTokens + byteSymbols
        var known = Set(tokens)
        for merge in merges {
            let parts = merge.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            precondition(parts.count == 2 && known.contains(parts[0]) && known.contains(parts[1]),
                         "merge \(merge) uses a symbol not yet in the vocabulary")
            let joined = parts[0] + parts[1]
            if known.insert(joined).inserted { tokens.append(joined) }
        }
        return (tokens, tokens.indices.map { $0 < specialTokens.count ? 3 : 1 })
    }

    /// Extends `tokens` (no control token among them after the first `specialTokens.count`) by merges until
    /// it holds `count` tokens: each token in id order, from the first byte symbol on, joined with each of
    /// the letters a–z, where the result is new. Both parts of a merge are always earlier tokens, so the
    /// vocabulary stays a valid byte-level BPE one of exactly `count` tokens.
    public static func syntheticMerges(extending tokens: inout [String], to count: Int) -> [String] {
        var known = Set(tokens)
        var merges: [String] = []
        let letters = (UInt8(ascii: "a")...UInt8(ascii: "z")).map { String(UnicodeScalar($0)) }
        var next = specialTokens.count
        while tokens.count < count {
            let left = tokens[next]
            next += 1
            for letter in letters where tokens.count < count {
                let joined = left + letter
                if known.insert(joined).inserted {
                    tokens.append(joined)
                    merges.append(left + " " + letter)
                }
            }
        }
        return merges
    }

    /// Tokens, their types and the merges, with `extraControlTokens` last, of `vocabularySize` tokens when set.
    public func fullVocabulary() -> (tokens: [String], types: [Int32], merges: [String]) {
        var (tokens, types) = Self.vocabulary
        var merges = Self.merges
        if let vocabularySize {
            precondition(vocabularySize >= tokens.count + extraControlTokens.count,
                         "a vocabulary of \(vocabularySize) tokens cannot hold the \(tokens.count + extraControlTokens.count) built-in ones")
            merges += Self.syntheticMerges(extending: &tokens, to: vocabularySize - extraControlTokens.count)
            types += [Int32](repeating: 1, count: tokens.count - types.count)
        }
        return (tokens + extraControlTokens, types + extraControlTokens.map { _ in 3 }, merges)
    }

    /// The GGUF file's contents.
    public func writer() -> GGUFWriter {
        let (tokens, types, merges) = fullVocabulary()
        let vocab = tokens.count
        let headDim = headDimension ?? width / headCount
        let arch = architecture
        var w = GGUFWriter()
        w.set("general.architecture", string: arch)
        w.set("general.name", string: name ?? "tiny-random-\(arch)")
        w.set("\(arch).block_count", uint32: UInt32(blockCount))
        w.set("\(arch).context_length", uint32: UInt32(contextLength))
        w.set("\(arch).embedding_length", uint32: UInt32(width))
        w.set("\(arch).feed_forward_length", uint32: UInt32(ffnWidth))
        w.set("\(arch).attention.head_count", uint32: UInt32(headCount))
        w.set("\(arch).attention.head_count_kv", uint32: UInt32(kvHeadCount))
        w.set("\(arch).rope.freq_base", float32: ropeBase)
        w.set("\(arch).attention.layer_norm_rms_epsilon", float32: rmsEpsilon)
        w.set("\(arch).vocab_size", uint32: UInt32(vocab))
        w.set("\(arch).rope.dimension_count", uint32: UInt32(headDim))
        if let linearRopeScaling {
            w.set("\(arch).rope.scaling.type", string: "linear")
            w.set("\(arch).rope.scaling.factor", float32: linearRopeScaling)
        }
        if let slidingWindow { w.set("\(arch).attention.sliding_window", uint32: UInt32(slidingWindow)) }
        if let headDimension {
            w.set("\(arch).attention.key_length", uint32: UInt32(headDimension))
            w.set("\(arch).attention.value_length", uint32: UInt32(headDimension))
        }
        w.set("tokenizer.ggml.model", string: "gpt2")
        w.set("tokenizer.ggml.pre", string: preTokenizer)
        w.set("tokenizer.ggml.tokens", strings: tokens)
        w.set("tokenizer.ggml.token_type", int32s: types)
        w.set("tokenizer.ggml.merges", strings: merges)
        w.set("tokenizer.ggml.bos_token_id", uint32: 1)
        w.set("tokenizer.ggml.eos_token_id", uint32: 2)
        w.set("tokenizer.ggml.unknown_token_id", uint32: 0)
        w.set("tokenizer.ggml.padding_token_id", uint32: 2)
        w.set("tokenizer.ggml.add_bos_token", .bool(false))
        w.set("tokenizer.ggml.add_space_prefix", .bool(false))
        if let template { w.set("tokenizer.chat_template", string: template) }

        let rng = CounterRNG(seed: seed)
        var tensorIndex: UInt64 = 0
        // Values ~ N(mean, std²), one counter stream per tensor, made when the file is written.
        func random(_ name: String, _ dimensions: [Int], std: Float, mean: Float = 0, as type: GGMLType) {
            defer { tensorIndex += 1 }
            let step = tensorIndex
            w.addTensor(name, dimensions: dimensions, as: type) { range in
                range.map { mean + std * Float(rng.normal(.test, step: step, index: UInt32($0))) }
            }
        }
        func norm(_ name: String, _ count: Int, std: Float = 0.1) { random(name, [count], std: std, mean: 1, as: .f32) }
        // A linear map from `input` to `output` features: GGML shape [input, output]. The 1/√input scale keeps
        // activations of order one, so the random model's logits are neither flat nor saturated.
        func linear(_ name: String, input: Int, output: Int, type: GGMLType) {
            random(name, [input, output], std: 1 / Float(input).squareRoot(), as: type)
        }
        random("token_embd.weight", [width, vocab], std: 0.25, as: embeddingType)
        norm("output_norm.weight", width)
        if separateOutput { linear("output.weight", input: width, output: vocab, type: weightType) }
        let kvWidth = kvHeadCount * headDim, qWidth = headCount * headDim
        let family = (try? Architecture.named(arch)) ?? Architecture.supported[0]
        if let ropeFrequencyFactors {
            w.addTensor("rope_freqs.weight", dimensions: [ropeFrequencyFactors.count], values: ropeFrequencyFactors, as: .f32)
        }
        for i in 0..<blockCount {
            norm("blk.\(i).attn_norm.weight", width)
            if family.fusedProjections {
                linear("blk.\(i).attn_qkv.weight", input: width, output: qWidth + 2 * kvWidth, type: weightType)
            } else {
                linear("blk.\(i).attn_q.weight", input: width, output: qWidth, type: weightType)
                linear("blk.\(i).attn_k.weight", input: width, output: kvWidth, type: weightType)
                linear("blk.\(i).attn_v.weight", input: width, output: kvWidth, type: weightType)
            }
            linear("blk.\(i).attn_output.weight", input: qWidth, output: width, type: weightType)
            if family.projectionBiases {
                // Large enough to move the logits visibly: a pass that dropped them would fail the references.
                random("blk.\(i).attn_q.bias", [qWidth], std: 0.5, as: .f32)
                random("blk.\(i).attn_k.bias", [kvWidth], std: 0.5, as: .f32)
                random("blk.\(i).attn_v.bias", [kvWidth], std: 0.5, as: .f32)
            }
            if family.queryKeyNorm {
                norm("blk.\(i).attn_q_norm.weight", headDim, std: 0.3)
                norm("blk.\(i).attn_k_norm.weight", headDim, std: 0.3)
            }
            if family.postNorms {
                norm("blk.\(i).post_attention_norm.weight", width)
                norm("blk.\(i).post_ffw_norm.weight", width)
            }
            norm("blk.\(i).ffn_norm.weight", width)
            if family.fusedProjections {
                linear("blk.\(i).ffn_up.weight", input: width, output: 2 * ffnWidth, type: weightType)
            } else {
                linear("blk.\(i).ffn_gate.weight", input: width, output: ffnWidth, type: weightType)
                linear("blk.\(i).ffn_up.weight", input: width, output: ffnWidth, type: weightType)
            }
            linear("blk.\(i).ffn_down.weight", input: ffnWidth, output: width, type: weightType)
        }
        return w
    }

    /// Writes the model to `url` atomically.
    public func write(to url: URL) throws {
        try writer().write(to: url)
    }
}
