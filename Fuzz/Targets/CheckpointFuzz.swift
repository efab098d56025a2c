import AdaptCore
import Adapters
import Foundation
import Training

/// Training checkpoints (resuming a train step): a 64-byte header with the payload's SHA-256, then one zstd
/// frame of tagged sections (META JSON, losses, parameters, optimizer moments, best weights).
public enum CheckpointFuzz: FuzzTarget {
    public static let name = "checkpoint"
    static let headerSize = 64

    public static func run(_ data: Data) {
        let (wrapped, rest) = FuzzInput.mode(data)
        // Wrapped: the input is the decompressed payload; compressing it and writing a matching header here lets
        // mutations reach the section parser, which a mutated zstd frame or digest would never let them do.
        guard let file = wrapped ? container(payload: rest) : rest else { return }
        _ = try? Checkpoint.decode(file, name: "fuzz.ckpt")
    }

    static func container(payload: Data) -> Data? {
        guard let compressed = try? Zstd.compress(payload, level: 1) else { return nil }
        var file = Data(Checkpoint.magic)
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { file.append(contentsOf: $0) } }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { file.append(contentsOf: $0) } }
        u32(Checkpoint.version)
        u32(0)
        u64(UInt64(compressed.count))
        u64(UInt64(payload.count))
        file.append(contentsOf: Digest.sha256(compressed).bytes)
        return file + compressed
    }

    public static func seeds() throws -> [Data] {
        let parameters = FuzzBase.adapterFile(rank: 1).tensors
        let configuration = TrainingConfiguration(steps: 4, batchSize: 2, maxLength: 32, adapter: AdapterSettings(rank: 1),
                                                  earlyStopping: EarlyStopping(every: 1, patience: 2), checkpointEvery: 2)
        let fresh = TrainingState.fresh(parameters)
        var stepped = TrainingState(parameters: parameters, optimizer: AdamWState(step: 2, firstMoment: parameters, secondMoment: parameters),
                                    cursor: DataCursor(epoch: 1, index: 1), microStep: 2, losses: [0.75, 0.5], tokens: 40,
                                    evaluations: [Evaluation(step: 2, loss: 0.6)], best: parameters,
                                    bestEvaluation: Evaluation(step: 2, loss: 0.6))
        stepped.staleEvaluations = 0
        var seeds: [Data] = []
        for state in [fresh, stepped] {
            let file = try Checkpoint(configuration: configuration, baseModelDigest: FuzzBase.shape.digest,
                                      datasetDigest: Digest.sha256("fuzz data"), state: state).encoded()
            seeds.append(Data([0]) + file)
            seeds.append(Data([1]) + (try Zstd.decompress(file.dropFirst(headerSize))))
        }
        return seeds
    }
}
