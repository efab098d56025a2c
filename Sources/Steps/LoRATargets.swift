import Model
import Pipelines

/// The one place pipeline target names meet model projection names.
///
/// Pipeline files name LoRA targets by their GGUF tensor names (`attn_q` … `ffn_down`, what a llama.cpp user
/// sees in `blk.N.attn_q.weight`); the Model module names the same projections `q, k, v, o, gate, up, down`
/// (as `adapt train --targets` does). Files keep the GGUF names, adapters record the model's names, and this
/// table is the only translation between them.
enum LoRATargets {
    static func projection(_ target: LoRATarget) -> Projection {
        switch target {
        case .attnQ: return .q
        case .attnK: return .k
        case .attnV: return .v
        case .attnOutput: return .o
        case .ffnGate: return .gate
        case .ffnUp: return .up
        case .ffnDown: return .down
        }
    }

    static func projections(_ targets: [LoRATarget]) -> [Projection] { targets.map(projection) }
}
