/// How one supported `general.architecture` differs from llama, as data the one forward and backward pass
/// read: no family has a copy of the pass.
///
/// Facts per family, from llama.cpp's loaders and graphs (src/models/*.cpp) and Hugging Face's modelling files:
/// - `llama`: RoPE on adjacent pairs (the converter permuted HF's Q and K rows for it), optional
///   `rope_freqs.weight` (Llama 3.x's frequency scaling, written by the converter from `rope_scaling`).
/// - `qwen2`: biases on the q, k and v projections; RoPE on the two halves of each head (NEOX; no permutation).
/// - `qwen3`: RMSNorm of each query and key head (its own weight of D values) before RoPE; NEOX RoPE; the head
///   size is `attention.key_length`, independent of the width.
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

    /// The architectures this build loads, in the order error messages list them.
    public static let supported: [Architecture] = [
        Architecture(name: "llama", rotaryPairing: .adjacent, projectionBiases: false, queryKeyNorm: false),
        Architecture(name: "qwen2", rotaryPairing: .halves, projectionBiases: true, queryKeyNorm: false),
        Architecture(name: "qwen3", rotaryPairing: .halves, projectionBiases: false, queryKeyNorm: true),
    ]

    public static var supportedNames: [String] { supported.map(\.name) }

    /// The description of `name`, or `ModelError.unsupportedArchitecture`.
    public static func named(_ name: String) throws -> Architecture {
        guard let architecture = supported.first(where: { $0.name == name }) else { throw ModelError.unsupportedArchitecture(name) }
        return architecture
    }
}
