import AdapterExchange
import Adapters
import Foundation

/// GGUF-LoRA adapters (`adapt registry import --format gguf-lora`), checked against a tiny base model.
public enum GGUFLoRAFuzz: FuzzTarget {
    public static let name = "gguf-lora"

    public static func run(_ data: Data) {
        let base = FuzzBase.shape
        FuzzInput.withFile(data) { url in
            if let adapter = try? GGUFLoRA.adapter(at: url, base: base, expectedRank: nil) { AcceptedAdapterExport.check(adapter) }
            _ = try? GGUFLoRA.adapter(at: url, base: base, expectedRank: 2)
        }
    }

    public static func seeds() throws -> [Data] {
        try GGUFLoRA.Precision.allCases.map { try GGUFLoRA.data(FuzzBase.adapter(rank: 2), base: FuzzBase.shape, precision: $0) }
    }
}
