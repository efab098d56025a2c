import AdaptCore
import Adapters
import Foundation
import Model
import Registry

extension AdapterBundle where Weights == LoRAParameters {
    /// An adapter file (verified by its trailing digest) as LoRA weights.
    public init(file: AdapterFile, digest: Digest, name: String, lineage: String? = nil, version: Int? = nil) throws {
        let metadata = file.metadata
        // The file's settings carry no dropout: inference applies the adapter in full.
        let config: LoRAConfig
        do { config = try LoRAConfig(metadata.settings) } catch {
            throw InferenceError.adapterShapeMismatch(adapter: name, reason: "it targets \(error.name), which is no llama projection")
        }
        let weights = LoRAParameters(config: config, names: file.tensors.names, shapes: file.tensors.shapes,
                                     values: file.tensors.values)
        self.init(weights: weights, name: name, digest: digest, baseModelDigest: metadata.baseModelDigest,
                  chatConvention: metadata.chatConvention, lineage: lineage, version: version)
    }

    /// Reads and verifies the adapter file at `url`: one read, one hash, one copy per tensor.
    public static func load(_ url: URL) throws -> AdapterBundle<LoRAParameters> {
        let verified = try AdapterFile.verify(try AdapterFile.readBytes(from: url), name: url.lastPathComponent)
        return try AdapterBundle(file: try AdapterFile.decode(verified), digest: verified.digest, name: verified.name)
    }
}

/// The registry as a session's source of active adapters: the lineage's active version, its file read from
/// the blob store and parsed.
///
/// The blob's bytes are hashed once: `AdapterFile.verify` checks in one pass both the digest the registry
/// names the blob by and the file's own trailing digest, before any tensor is decoded (the blob store's
/// verifying read would hash the same 3.7 MB a second time).
public struct RegistryAdapterCatalog: AdapterCatalog {
    public let registry: AdapterRegistry

    public init(registry: AdapterRegistry) { self.registry = registry }

    public func activeDigest(lineage: String) throws -> Digest? {
        let identifier = try ShortIdentifier(validating: lineage, field: "lineage")
        return try registry.active(lineage: identifier)?.adapterDigest
    }

    public func activeAdapter(lineage: String) throws -> AdapterBundle<LoRAParameters>? {
        let identifier = try ShortIdentifier(validating: lineage, field: "lineage")
        guard let version = try registry.active(lineage: identifier) else { return nil }
        let data = try registry.unverifiedAdapterData(version)
        let name = "\(lineage)/\(version.name)"
        let verified: VerifiedAdapterBytes
        do {
            verified = try AdapterFile.verify(data, name: name, expectedDigest: version.adapterDigest)
        } catch let error as AdapterFileError {
            // Bytes that no longer hash to their name: the same refusal as the blob store's own check.
            throw RegistryError.adapterUnavailable(lineage: lineage, version: version.name, reason: error.description)
        }
        return try AdapterBundle(file: try AdapterFile.decode(verified), digest: verified.digest, name: name,
                                 lineage: lineage, version: version.number)
    }
}
