import AdaptCore
import Adapters
import Foundation

/// Small, valid adapt adapter files for commands that check the format (`adapt registry add`).
enum TestAdapter {
    /// A one-tensor adapter whose bytes, and so digest, differ for each `seed`.
    static func bytes(_ seed: Int) -> Data {
        // The file keeps the training configuration as opaque JSON; the registry never reads it.
        let configuration = JSONValue.object(["steps": .int(1)])
        let metadata = AdapterFileMetadata(
            baseModelDigest: Digest.sha256("test base model"), chatConvention: "chatml", templateDigest: nil,
            targets: ["attn_q"], rank: 1, alpha: 2, steps: 1, trainingExamples: 1, heldOutExamples: 0,
            truncatedExamples: 0, trainingTokens: 1, metrics: [:], trainingConfiguration: configuration,
            trainingConfigurationDigest: JSON.digest(configuration))
        let tensors = NamedTensors(names: ["blk.0.attn_q.lora_a"], shapes: [[1, 2]], values: [[Float(seed), 1]])
        return AdapterFile(metadata: metadata, tensors: tensors).encoded().data
    }
}
