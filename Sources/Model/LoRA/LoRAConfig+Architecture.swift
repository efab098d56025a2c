/// The targets an architecture's tensors can carry, as every other tool names them.
///
/// phi3 stores q, k, v in one `attn_qkv` and gate, up in one `ffn_up`; PEFT, mlx-lm and llama.cpp's GGUF-LoRA
/// can only put one pair on each of those (PEFT cannot adapt q without k: `qkv_proj` is one module), so an
/// adapter of phi3 does too: any of q, k, v names the `qkv` pair, any of gate, up the `gate_up` pair, in the
/// place of the first of them. A fused target on an architecture that keeps those projections apart names no
/// tensor of it and is refused.
extension LoRAConfig {
    public func resolved(for architecture: Architecture) throws(ModelError) -> LoRAConfig {
        var resolved = self
        resolved.targets = []
        for target in targets {
            if architecture.fusedProjections {
                let whole = target.fused ?? target
                if !resolved.targets.contains(whole) { resolved.targets.append(whole) }
            } else {
                guard target.members.isEmpty else {
                    let parts = target.members.map(\.rawValue)
                    throw .unsupportedTargets(architecture: architecture.name, reason: "it keeps \(parts.joined(separator: ", ")) apart, so \(target.rawValue) names no tensor of it; target \(parts.joined(separator: ",")) instead")
                }
                resolved.targets.append(target)
            }
        }
        return resolved
    }
}
