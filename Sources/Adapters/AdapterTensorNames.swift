/// How one model architecture names the weights an adapter changes, in each tool: adapt's own tensor names
/// (`blk.N.q.lora_a`), the base GGUF's (`blk.N.attn_q.weight`), and Hugging Face's module paths
/// (`model.layers.N.self_attn.q_proj`), which PEFT and mlx-lm key their files by.
///
/// Only architectures the engine loads are here: an export is only made of an adapter it trained or applied.
public struct AdapterTensorNames: Sendable {
    /// The GGUF `general.architecture` string.
    public let architecture: String
    /// Projection name (as adapter settings name it) → the GGUF tensor name within a block, without `.weight`.
    public let gguf: [String: String]
    /// Projection name → the Hugging Face module path within a block.
    public let huggingFace: [String: String]
    /// The Hugging Face class and model type transformers and mlx-lm know the architecture by.
    public let huggingFaceClass: String
    public let modelType: String
    /// Whether llama.cpp's converter permuted the rows of q and k (its llama RoPE pairs adjacent dimensions,
    /// Hugging Face's pairs halves), so that B of q and k must be permuted on the way between the two.
    public let permutesQueryAndKey: Bool

    /// The names of `architecture`. llama, qwen2, qwen3 and gemma3 share llama.cpp's tensor names and Hugging
    /// Face's module paths (transformers' LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and
    /// Gemma3ForCausalLM all hold `model.layers.N.self_attn.q_proj` … `mlp.down_proj`; mlx-lm's models keep
    /// those paths). Only llama's converter permutes q and k: the others rotate halves, as Hugging Face does.
    ///
    /// phi3 (Phi3ForCausalLM, mlx-lm's phi3) has `self_attn.qkv_proj` (rows q, k, v) and `mlp.gate_up_proj`
    /// (rows gate, up), which llama.cpp's tensor map stores as `attn_qkv` and `ffn_up` in the same row order:
    /// adapt's fused targets `qkv` and `gate_up` travel under those names, B's rows unchanged.
    public static func of(architecture: String) throws(AdapterExchangeError) -> AdapterTensorNames {
        if architecture == "phi3" {
            return AdapterTensorNames(
                architecture: architecture,
                gguf: ["qkv": "attn_qkv", "o": "attn_output", "gate_up": "ffn_up", "down": "ffn_down"],
                huggingFace: ["qkv": "self_attn.qkv_proj", "o": "self_attn.o_proj", "gate_up": "mlp.gate_up_proj", "down": "mlp.down_proj"],
                huggingFaceClass: "Phi3ForCausalLM", modelType: "phi3", permutesQueryAndKey: false)
        }
        let (huggingFaceClass, modelType, permutes): (String, String, Bool)
        switch architecture {
        case "llama": (huggingFaceClass, modelType, permutes) = ("LlamaForCausalLM", "llama", true)
        case "qwen2": (huggingFaceClass, modelType, permutes) = ("Qwen2ForCausalLM", "qwen2", false)
        case "qwen3": (huggingFaceClass, modelType, permutes) = ("Qwen3ForCausalLM", "qwen3", false)
        // The text-only Gemma 3 (270M and 1B): transformers' `gemma3_text` config and class.
        case "gemma3": (huggingFaceClass, modelType, permutes) = ("Gemma3ForCausalLM", "gemma3_text", false)
        default: throw .unsupportedArchitecture(architecture)
        }
        return AdapterTensorNames(
            architecture: architecture,
            gguf: ["q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
                   "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"],
            huggingFace: ["q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
                          "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"],
            huggingFaceClass: huggingFaceClass, modelType: modelType, permutesQueryAndKey: permutes)
    }

    /// The architectures whose adapters are exported and imported, in the order messages list them.
    public static let architectures = ["llama", "qwen2", "qwen3", "gemma3", "phi3"]

    /// adapt's name of the A or B matrix of `projection` in `block` (the names `LoRAParameters` uses).
    public static func adapt(block: Int, projection: String, matrix: Matrix) -> String {
        "blk.\(block).\(projection).lora_\(matrix.rawValue)"
    }

    public enum Matrix: String, Sendable, CaseIterable { case a, b }

    /// Splits one of adapt's tensor names into block, projection and matrix, or nil.
    public static func parseAdapt(_ name: String) -> (block: Int, projection: String, matrix: Matrix)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "blk", let block = Int(parts[1]), block >= 0, String(block) == parts[1],
              parts[3].hasPrefix("lora_"), let matrix = Matrix(rawValue: String(parts[3].dropFirst(5))) else { return nil }
        return (block, String(parts[2]), matrix)
    }

    /// The base GGUF weight a projection of a block adapts, e.g. `blk.3.attn_q.weight`.
    public func ggufWeight(block: Int, projection: String) -> String? {
        gguf[projection].map { "blk.\(block).\($0).weight" }
    }

    /// The Hugging Face module path of a projection of a block, e.g. `model.layers.3.self_attn.q_proj`.
    public func huggingFaceModule(block: Int, projection: String) -> String? {
        huggingFace[projection].map { "model.layers.\(block).\($0)" }
    }

    /// The projection a Hugging Face module path names, with its block; nil when it names none.
    public func parseHuggingFaceModule(_ path: Substring) -> (block: Int, projection: String)? {
        guard path.hasPrefix("model.layers.") else { return nil }
        let rest = path.dropFirst("model.layers.".count)
        guard let dot = rest.firstIndex(of: "."), let block = Int(rest[..<dot]), block >= 0,
              String(block) == rest[..<dot] else { return nil }
        let module = rest[rest.index(after: dot)...]
        guard let projection = huggingFace.first(where: { $0.value == module })?.key else { return nil }
        return (block, projection)
    }

    /// The projection a GGUF weight name (`blk.N.attn_q.weight`) names, with its block.
    public func parseGGUFWeight(_ name: Substring) -> (block: Int, projection: String)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "blk", parts[3] == "weight", let block = Int(parts[1]), block >= 0,
              String(block) == parts[1], let projection = gguf.first(where: { $0.value == parts[2] })?.key else { return nil }
        return (block, projection)
    }
}
