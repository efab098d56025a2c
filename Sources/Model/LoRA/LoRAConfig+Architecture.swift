/// The targets an architecture's tensors can carry, as every other tool names them.
///
/// phi3 stores q, k, v in one `attn_qkv` and gate, up in one `ffn_up`; PEFT, mlx-lm and llama.cpp's GGUF-LoRA
/// can only put one pair on each of those, so an adapter of phi3 does too: q, k and v together become `qkv`,
/// gate and up together `gate_up` (in the place of the first of them). Part of a fused tensor alone has no
/// name outside adapt and is refused; so is a fused target on an architecture that keeps its projections apart.
extension LoRAConfig {
    public func resolved(for architecture: Architecture) throws(ModelError) -> LoRAConfig {
        var resolved = self
        resolved.targets = []
        for target in targets {
            if architecture.fusedProjections {
                if let fused = target.fused {
                    let missing = fused.members.filter { !targets.contains($0) }
                    guard missing.isEmpty else {
                        throw .unsupportedTargets(architecture: architecture.name, reason: "\(fused.members.map(\.rawValue).joined(separator: ", ")) are rows of one tensor and take one LoRA pair together; target \(fused.rawValue) (or all of \(fused.members.map(\.rawValue).joined(separator: ",")))")
                    }
                    if !resolved.targets.contains(fused) { resolved.targets.append(fused) }
                    continue
                }
                if !target.members.isEmpty, targets.contains(where: { target.members.contains($0) }) {
                    throw .unsupportedTargets(architecture: architecture.name, reason: "\(target.rawValue) already holds \(target.members.map(\.rawValue).joined(separator: ", ")); name either the fused target or its parts")
                }
                if !resolved.targets.contains(target) { resolved.targets.append(target) }
            } else {
                guard target.members.isEmpty else {
                    throw .unsupportedTargets(architecture: architecture.name, reason: "it keeps \(target.members.map(\.rawValue).joined(separator: ", ")) apart, so \(target.rawValue) names no tensor of it; target \(target.members.map(\.rawValue).joined(separator: ",")) instead")
                }
                resolved.targets.append(target)
            }
        }
        return resolved
    }
}
