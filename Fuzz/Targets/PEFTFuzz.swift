import Adapters
import Foundation

/// PEFT adapter directories (`adapter_config.json` and `adapter_model.safetensors`), checked against a tiny base
/// model: the input's first part is the config, the rest the weights.
public enum PEFTFuzz: FuzzTarget {
    public static let name = "peft"

    public static func run(_ data: Data) {
        let (config, weights) = FuzzInput.split(data)
        if let adapter = try? PEFTFormat.adapter(weights: weights, config: config, directory: "fuzz", base: FuzzBase.shape, expectedRank: nil) {
            AcceptedAdapterExport.check(adapter)
        }
    }

    public static func seeds() throws -> [Data] {
        try [1, 2].map { rank in
            let (weights, config) = try PEFTFormat.files(FuzzBase.adapter(rank: rank), base: FuzzBase.shape)
            return FuzzInput.joined(config, weights)
        }
    }
}
