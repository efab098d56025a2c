import AdaptCore
import Foundation
import Model
import Registry
import Training

extension AdapterBundle where Weights == LoRAParameters {
    /// An adapter file (Training's `AdapterFile`, verified by its trailing digest) as LoRA weights.
    public init(file: AdapterFile, digest: Digest, name: String, lineage: String? = nil, version: Int? = nil) throws {
        let metadata = file.metadata
        var targets: [Projection] = []
        for target in metadata.targets {
            guard let projection = Projection(rawValue: target) else {
                throw InferenceError.adapterShapeMismatch(adapter: name, reason: "it targets \(target), which is no llama projection")
            }
            targets.append(projection)
        }
        // Dropout only exists in training; inference applies the adapter in full.
        let config = LoRAConfig(rank: metadata.rank, alpha: metadata.alpha, dropout: 0, targets: targets)
        let weights = LoRAParameters(config: config, names: file.tensors.names, shapes: file.tensors.shapes,
                                     values: file.tensors.values)
        self.init(weights: weights, name: name, digest: digest, baseModelDigest: metadata.baseModelDigest,
                  chatConvention: metadata.chatConvention, lineage: lineage, version: version)
    }

    /// Reads and verifies the adapter file at `url`.
    public static func load(_ url: URL) throws -> AdapterBundle<LoRAParameters> {
        let (file, digest) = try AdapterFile.read(from: url)
        return try AdapterBundle(file: file, digest: digest, name: url.lastPathComponent)
    }
}

/// The registry as a session's source of active adapters: the lineage's active version, its file read from
/// the blob store (digest verified) and parsed.
public struct RegistryAdapterCatalog: AdapterCatalog {
    public let registry: AdapterRegistry

    public init(registry: AdapterRegistry) { self.registry = registry }

    public func activeAdapter(lineage: String) throws -> AdapterBundle<LoRAParameters>? {
        let identifier = try ShortIdentifier(validating: lineage, field: "lineage")
        guard let version = try registry.active(lineage: identifier) else { return nil }
        let data = try registry.adapterData(version)
        let name = "\(lineage)/\(version.name)"
        let (file, digest) = try AdapterFile.decode(data, name: name)
        return try AdapterBundle(file: file, digest: digest, name: name, lineage: lineage, version: version.number)
    }
}
