import AdaptCore
import Adapters
import Foundation

let sampleBaseDigest = Digest.sha256("test base model")

/// Four tensors shaped like a rank-3 adapter on two projections of a 5-token toy model, A seeded random and
/// B zero (as training starts them).
func sampleTensors(seed: UInt64 = 3) -> NamedTensors {
    let rank = 3, width = 5
    let rng = CounterRNG(seed: seed)
    func random(_ count: Int, _ step: UInt64) -> [Float] {
        (0..<count).map { Float(rng.normal(.loraInit, step: step, index: UInt32($0)) * 0.3) }
    }
    return NamedTensors(names: ["blk.0.q.lora_a", "blk.0.q.lora_b", "blk.1.v.lora_a", "blk.1.v.lora_b"],
                        shapes: [[rank, width], [width, rank], [rank, width], [width, rank]],
                        values: [random(rank * width, 0), [Float](repeating: 0, count: width * rank),
                                 random(rank * width, 1), [Float](repeating: 0, count: width * rank)])
}

/// An adapter file of `tensors` with the metadata a 30-step run writes.
func sampleAdapter(_ tensors: NamedTensors = sampleTensors(), alpha: Float = 6) -> AdapterFile {
    // The file stores the training configuration as opaque JSON; any object stands for it here.
    let configuration = JSONValue.object(["steps": .int(30), "seed": .int(3)])
    let metadata = AdapterFileMetadata(baseModelDigest: sampleBaseDigest, chatConvention: "chatml",
                                       templateDigest: Digest.sha256("template"), targets: ["q", "v"], rank: 3,
                                       alpha: alpha, steps: 30, trainingExamples: 10, heldOutExamples: 2,
                                       truncatedExamples: 0, trainingTokens: 1440, metrics: ["final_loss": 0.25],
                                       trainingConfiguration: configuration,
                                       trainingConfigurationDigest: JSON.digest(configuration))
    return AdapterFile(metadata: metadata, tensors: tensors)
}

/// The adapter-file error `body` throws, nil when it throws none.
func thrown<T>(_ body: () throws -> T) -> AdapterFileError? {
    do { _ = try body(); return nil } catch let error as AdapterFileError { return error } catch { return .io("\(error)") }
}
