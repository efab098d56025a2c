import AdaptCore
import Foundation

/// A tiny llama-family model with random weights, written as a real GGUF file so every test in the project
/// can load, tokenize, run and train a model in milliseconds.
///
/// Its vocabulary is a genuine byte-level BPE vocabulary: the ChatML control tokens, all 256 byte symbols in
/// GPT-2's byte-to-unicode order (the order SmolLM2's vocabulary uses), and a list of English merges whose
/// parts always precede them, so any text tokenizes. Weights are drawn from `CounterRNG(seed)` (purpose
/// `.test`, step = tensor index), so one seed always writes the same bytes.
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

    /// Llama 3.1's rope_scaling (factor 8, low_freq_factor 1, high_freq_factor 4) with an original context of
    /// 64 positions instead of 8192, so that a head of 16 dimensions has pairs of all three kinds.
    public static func llama3FrequencyFactors(rotated: Int, base: Float) -> [Float] {
        let (factor, low, high, original) = (8.0, 1.0, 4.0, 64.0)
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

    /// The GGUF file's contents.
    public func writer() -> GGUFWriter {
        var (tokens, types) = Self.vocabulary
        tokens += extraControlTokens
        types += extraControlTokens.map { _ in 3 }
        let vocab = tokens.count
        let headDim = headDimension ?? width / headCount
        let arch = architecture
        var w = GGUFWriter()
        w.set("general.architecture", string: arch)
        w.set("general.name", string: "tiny-random-\(arch)")
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
        w.set("tokenizer.ggml.pre", string: "smollm")
        w.set("tokenizer.ggml.tokens", strings: tokens)
        w.set("tokenizer.ggml.token_type", int32s: types)
        w.set("tokenizer.ggml.merges", strings: Self.merges)
        w.set("tokenizer.ggml.bos_token_id", uint32: 1)
        w.set("tokenizer.ggml.eos_token_id", uint32: 2)
        w.set("tokenizer.ggml.unknown_token_id", uint32: 0)
        w.set("tokenizer.ggml.padding_token_id", uint32: 2)
        w.set("tokenizer.ggml.add_bos_token", .bool(false))
        w.set("tokenizer.ggml.add_space_prefix", .bool(false))
        if let template { w.set("tokenizer.chat_template", string: template) }

        let rng = CounterRNG(seed: seed)
        var tensorIndex: UInt64 = 0
        // Values ~ N(mean, std²), one counter stream per tensor.
        func random(_ count: Int, std: Float, mean: Float = 0) -> [Float] {
            defer { tensorIndex += 1 }
            return (0..<count).map { mean + std * Float(rng.normal(.test, step: tensorIndex, index: UInt32($0))) }
        }
        // A linear map from `input` to `output` features: GGML shape [input, output]. The 1/√input scale keeps
        // activations of order one, so the random model's logits are neither flat nor saturated.
        func linear(_ name: String, input: Int, output: Int, type: GGMLType) {
            w.addTensor(name, dimensions: [input, output], values: random(input * output, std: 1 / Float(input).squareRoot()), as: type)
        }
        w.addTensor("token_embd.weight", dimensions: [width, vocab], values: random(width * vocab, std: 0.25), as: embeddingType)
        w.addTensor("output_norm.weight", dimensions: [width], values: random(width, std: 0.1, mean: 1), as: .f32)
        if separateOutput { linear("output.weight", input: width, output: vocab, type: weightType) }
        let kvWidth = kvHeadCount * headDim, qWidth = headCount * headDim
        let family = (try? Architecture.named(arch)) ?? Architecture.supported[0]
        if let ropeFrequencyFactors {
            w.addTensor("rope_freqs.weight", dimensions: [ropeFrequencyFactors.count], values: ropeFrequencyFactors, as: .f32)
        }
        for i in 0..<blockCount {
            w.addTensor("blk.\(i).attn_norm.weight", dimensions: [width], values: random(width, std: 0.1, mean: 1), as: .f32)
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
                w.addTensor("blk.\(i).attn_q.bias", dimensions: [qWidth], values: random(qWidth, std: 0.5), as: .f32)
                w.addTensor("blk.\(i).attn_k.bias", dimensions: [kvWidth], values: random(kvWidth, std: 0.5), as: .f32)
                w.addTensor("blk.\(i).attn_v.bias", dimensions: [kvWidth], values: random(kvWidth, std: 0.5), as: .f32)
            }
            if family.queryKeyNorm {
                w.addTensor("blk.\(i).attn_q_norm.weight", dimensions: [headDim], values: random(headDim, std: 0.3, mean: 1), as: .f32)
                w.addTensor("blk.\(i).attn_k_norm.weight", dimensions: [headDim], values: random(headDim, std: 0.3, mean: 1), as: .f32)
            }
            if family.postNorms {
                w.addTensor("blk.\(i).post_attention_norm.weight", dimensions: [width], values: random(width, std: 0.1, mean: 1), as: .f32)
                w.addTensor("blk.\(i).post_ffw_norm.weight", dimensions: [width], values: random(width, std: 0.1, mean: 1), as: .f32)
            }
            w.addTensor("blk.\(i).ffn_norm.weight", dimensions: [width], values: random(width, std: 0.1, mean: 1), as: .f32)
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
