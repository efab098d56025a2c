/// How one supported `general.architecture` differs from llama, as data the one forward and backward pass
/// read: no family has a copy of the pass.
///
/// Facts per family, from llama.cpp's loaders and graphs (src/models/*.cpp) and Hugging Face's modelling files:
/// - `llama`: RoPE on adjacent pairs (the converter permuted HF's Q and K rows for it), optional
///   `rope_freqs.weight` (Llama 3.x's frequency scaling, written by the converter from `rope_scaling`).
/// - `qwen2`: biases on the q, k and v projections; RoPE on the two halves of each head (NEOX; no permutation).
/// - `qwen3`: RMSNorm of each query and key head (its own weight of D values) before RoPE; NEOX RoPE; the head
///   size is `attention.key_length`, independent of the width.
/// - `gemma3`: embeddings scaled by √C; RMSNorm after attention and after the feed-forward as well as before
///   (`post_attention_norm`, `post_ffw_norm`); GELU (tanh form) gating; q/k norms; NEOX RoPE; five of every six
///   blocks attend only to the last `attention.sliding_window` positions with RoPE base 10000 and no scaling,
///   the sixth to everything with the file's base and scaling (llama.cpp: set_swa_pattern(6),
///   rope_freq_base_train_swa = 10000). The converter stores Gemma's norm weights with HF's `1 +` folded in.
/// - `phi3`: q, k and v in one `attn_qkv` tensor (rows q, then k, then v; separate tensors are accepted too)
///   and gate and up in one `ffn_up` of 2F rows (gate first); NEOX RoPE; its own `output.weight`. The
///   projections are row ranges of the fused tensors; an adapter has one pair on each fused tensor, as PEFT's
///   on `qkv_proj` and `gate_up_proj` (`Projection.qkv`, `.gateUp`, `LoRAConfig.resolved`).
public struct Architecture: Sendable, Equatable, Codable {
    /// Which dimensions of a head RoPE rotates together.
    public enum RotaryPairing: String, Sendable, Codable {
        /// (2i, 2i + 1): ggml's GGML_ROPE_TYPE_NORM.
        case adjacent
        /// (i, i + R/2): ggml's GGML_ROPE_TYPE_NEOX, HF's rotate_half.
        case halves
    }

    /// `general.architecture`, also the prefix of its metadata keys.
    public var name: String
    public var rotaryPairing: RotaryPairing
    /// `blk.N.attn_{q,k,v}.bias` are read and added after the projections.
    public var projectionBiases: Bool
    /// `blk.N.attn_{q,k}_norm.weight` (D) normalise every query and key head before RoPE.
    public var queryKeyNorm: Bool
    /// `attn_qkv` (when present) and `ffn_up` hold several projections' rows one after another.
    public var fusedProjections = false
    /// The token embedding is multiplied by √C before the first block.
    public var scaledEmbedding = false
    /// `blk.N.post_attention_norm.weight` and `blk.N.post_ffw_norm.weight` normalise the attention and
    /// feed-forward outputs before they join the residual stream.
    public var postNorms = false
    /// The gate's nonlinearity in act(gate)·up.
    public var activation = Activation.silu
    /// Blocks b with b % n < n − 1 attend within a sliding window; nil: every block attends to everything.
    public var slidingWindowPattern: Int? = nil
    /// The RoPE base of sliding-window blocks (which use no frequency scaling).
    public var slidingWindowRopeBase: Float = 10000

    public enum Activation: String, Sendable, Codable {
        case silu
        /// GELU in its tanh approximation (HF's gelu_pytorch_tanh, ggml's gelu).
        case geluTanh
    }

    /// The architectures this build loads, in the order error messages list them.
    public static let supported: [Architecture] = [
        Architecture(name: "llama", rotaryPairing: .adjacent, projectionBiases: false, queryKeyNorm: false),
        Architecture(name: "qwen2", rotaryPairing: .halves, projectionBiases: true, queryKeyNorm: false),
        Architecture(name: "qwen3", rotaryPairing: .halves, projectionBiases: false, queryKeyNorm: true),
        Architecture(name: "gemma3", rotaryPairing: .halves, projectionBiases: false, queryKeyNorm: true, scaledEmbedding: true,
                     postNorms: true, activation: .geluTanh, slidingWindowPattern: 6),
        Architecture(name: "phi3", rotaryPairing: .halves, projectionBiases: false, queryKeyNorm: false, fusedProjections: true),
    ]

    /// Whether block `b` attends within the sliding window.
    public func isSlidingWindow(block b: Int) -> Bool {
        guard let n = slidingWindowPattern else { return false }
        return b % n < n - 1
    }

    public static var supportedNames: [String] { supported.map(\.name) }

    /// The description of `name`, or `ModelError.unsupportedArchitecture`.
    public static func named(_ name: String) throws -> Architecture {
        guard let architecture = supported.first(where: { $0.name == name }) else { throw ModelError.unsupportedArchitecture(name) }
        return architecture
    }
}
