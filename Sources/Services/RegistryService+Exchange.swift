import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Registry

/// Adapters to and from llama.cpp (GGUF-LoRA), Hugging Face PEFT and mlx-lm, checked against the base model.
extension RegistryService {
    /// What `registry export` writes.
    public struct ExportRequest: Sendable {
        public let lineage: ShortIdentifier
        /// nil: the lineage's active version.
        public let version: Int?
        public let format: ExchangeFormat
        public let precision: GGUFLoRA.Precision
        public let out: URL
        /// The base model the adapter was trained on; its existence is checked once the version is found.
        public let model: URL

        public init(lineage: ShortIdentifier, version: Int?, format: ExchangeFormat, precision: GGUFLoRA.Precision,
                    out: URL, model: URL) {
            (self.lineage, self.version, self.format, self.precision, self.out, self.model) = (lineage, version, format, precision, out, model)
        }
    }

    public struct Exported: Sendable {
        public let version: AdapterVersion
        public let result: AdapterExport.Result
    }

    /// Writes the version in the request's format and reads the export back.
    public static func export(_ request: ExportRequest, from registry: AdapterRegistry) throws -> Exported {
        let lineage = request.lineage
        let version: AdapterVersion
        if let number = request.version {
            version = try registry.version(VersionReference(lineage: lineage, number: number))
        } else {
            guard let active = try registry.active(lineage: lineage) else {
                throw RegistryServiceError.noActiveVersion(lineage: lineage.value)
            }
            version = active
        }
        let (adapter, _) = try AdapterFile.decode(try registry.adapterData(version), name: "\(lineage)/\(version.name)")
        let base = try BaseModelShape(model: try existingModel(request.model))
        let result = try AdapterExport.export(adapter, base: base, format: request.format, precision: request.precision,
                                              to: request.out)
        return Exported(version: version, result: result)
    }

    /// An adapter from another tool as an adapt adapter file for `lineage`: checked against the base model
    /// (the lineage's, which `model` must be when the lineage has versions) and the lineage's rank.
    static func importedAdapter(format: ExchangeFormat, path: String, model: URL, chatFormat: ChatConvention?, lineage: ShortIdentifier,
                                registry: AdapterRegistry) throws -> (data: Data, metadata: AdapterMetadata, weights: Digest) {
        let model = try existingModel(model)
        let base = try BaseModelShape(model: model)
        var expectedRank: Int?
        if let latest = try registry.versions(lineage: lineage).last {
            let (file, _) = try AdapterFile.decode(try registry.adapterData(latest), name: "\(lineage)/\(latest.name)")
            guard file.metadata.baseModelDigest == base.digest else {
                throw RegistryServiceError.lineageOnOtherBase(lineage: lineage.value, lineageBase: file.metadata.baseModelDigest.hex,
                                                              model: base.digest.hex)
            }
            expectedRank = file.metadata.rank
        }
        let portable = try AdapterImport.read(format: format, at: URL(fileURLWithPath: path), base: base, expectedRank: expectedRank)
        let file = try AdapterImport.adapterFile(portable, format: format, base: base, model: model, chatFormat: chatFormat)
        let metadata = AdapterMetadata(baseModel: base.digest, chatConvention: ShortIdentifier(file.metadata.chatConvention))
        return (file.encoded().data, metadata, portable.weightsDigest)
    }

    static func existingModel(_ url: URL) throws -> URL {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreError.fileUnreadable(path: url.path, reason: "no such file; pass the base model with --model")
        }
        return url
    }
}
