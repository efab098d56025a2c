import AdaptCore
import Adapters
import Foundation

/// adapt's own adapter files (`adapt registry add`, inference, the steps): magic, version, JSON header,
/// tensors, SHA-256 trailer.
public enum AdapterFuzz: FuzzTarget {
    public static let name = "adapter"

    public static func run(_ data: Data) {
        let (wrapped, rest) = FuzzInput.mode(data)
        // Wrapped: the input is the body and the trailer is made to match, so mutations reach the header parser
        // instead of stopping at the digest check.
        let file = wrapped ? rest + Data(Digest.sha256(rest).bytes) : rest
        guard let (adapter, _) = try? AdapterFile.decode(file, name: "fuzz.lora") else { return }
        _ = PortableAdapter(file: adapter)
    }

    public static func seeds() throws -> [Data] {
        var seeds: [Data] = []
        for rank in [1, 2] {
            let file = FuzzBase.adapterFile(rank: rank).encoded().data
            seeds.append(Data([0]) + file)
            seeds.append(Data([1]) + file.dropLast(32))
        }
        return seeds
    }
}
