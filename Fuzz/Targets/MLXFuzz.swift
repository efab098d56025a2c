import Adapters
import Foundation

/// mlx-lm adapter directories (`adapter_config.json` and `adapters.safetensors`), checked against a tiny base
/// model: the input's first part is the config, the rest the weights.
public enum MLXFuzz: FuzzTarget {
    public static let name = "mlx"

    public static func run(_ data: Data) {
        let (config, weights) = FuzzInput.split(data)
        if let adapter = try? MLXFormat.adapter(weights: weights, config: config, directory: "fuzz", base: FuzzBase.shape, expectedRank: nil) {
            AcceptedAdapterExport.check(adapter)
        }
    }

    public static func seeds() throws -> [Data] {
        try [1, 2].map { rank in
            let (weights, config) = try MLXFormat.files(FuzzBase.adapter(rank: rank), base: FuzzBase.shape)
            return FuzzInput.joined(config, weights)
        }
    }
}
