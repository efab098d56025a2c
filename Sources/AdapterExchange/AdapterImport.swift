import AdaptCore
import Adapters
import Foundation
import Model

/// Reading an adapter another tool made, into an adapt adapter file for the lineage's base model.
public enum AdapterImport {
    /// The adapter at `url` (a GGUF-LoRA file, or a PEFT or mlx-lm directory), checked against `base`.
    public static func read(format: ExchangeFormat, at url: URL, base: BaseModelShape, expectedRank: Int?) throws -> PortableAdapter {
        try requireReadable(format: format, at: url)
        switch format {
        case .ggufLoRA:
            return try GGUFLoRA.adapter(at: url, base: base, expectedRank: expectedRank)
        case .peft:
            let (weights, config) = try files(url, weights: PEFTFormat.weightsFile, config: PEFTFormat.configFile, base: base)
            return try PEFTFormat.adapter(weights: weights, config: config, directory: url.lastPathComponent, base: base, expectedRank: expectedRank)
        case .mlx:
            let (weights, config) = try files(url, weights: MLXFormat.weightsFile, config: MLXFormat.configFile, base: base)
            return try MLXFormat.adapter(weights: weights, config: config, directory: url.lastPathComponent, base: base, expectedRank: expectedRank)
        }
    }

    /// An adapt adapter file of `adapter` for the base model at `model`: its digest and chat convention, and a
    /// training record that says only where the weights came from (they were not trained here).
    public static func adapterFile(_ adapter: PortableAdapter, format: ExchangeFormat, base: BaseModelShape, model: URL,
                                   chatFormat: ChatConvention? = nil) throws -> AdapterFile {
        // The convention a session checks the adapter against: the model's template or the one named, which a
        // model without a template needs.
        let formatter = try ChatFormatter(gguf: try GGUFFile(url: model), chatFormat: chatFormat)
        let configuration: JSONValue = .object(["imported_from": .string(format.rawValue)])
        let metadata = AdapterFileMetadata(
            baseModelDigest: base.digest, chatConvention: formatter.convention.rawValue,
            templateDigest: Digest(hex: formatter.templateDigest), targets: adapter.targets, rank: adapter.rank,
            alpha: adapter.alpha, steps: 0, trainingExamples: 0, heldOutExamples: 0, truncatedExamples: 0, trainingTokens: 0,
            metrics: [:], trainingConfiguration: configuration, trainingConfigurationDigest: JSON.digest(configuration))
        return AdapterFile(metadata: metadata, tensors: adapter.tensors)
    }

    /// Throws unless `url` is there to read as `format`: a GGUF-LoRA file, a PEFT or mlx-lm directory. Checked before
    /// anything else is opened, so a mistyped path changes nothing; and before the GGUF reader, which would call a
    /// missing adapter a model file to fetch.
    public static func requireReadable(format: ExchangeFormat, at url: URL) throws {
        if format == .ggufLoRA {
            do { try RegularFile.requireReadable(url) } catch {
                throw AdapterExchangeError.io("cannot read the GGUF-LoRA adapter \(url.path): \(UnreadablePath.reason(url.path)); "
                                              + "pass the .gguf file llama.cpp's convert_lora_to_gguf.py or adapt registry export wrote")
            }
            return
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            let reason = FileManager.default.fileExists(atPath: url.path) ? "it is not a directory" : UnreadablePath.reason(url.path)
            throw AdapterExchangeError.io("cannot read the adapter directory \(url.path): \(reason); pass the directory the adapter was saved to")
        }
    }

    /// The most bytes an adapter's weights file for `base` can hold: f32 LoRA pairs of full rank (min(in, out), past
    /// which a rank adds nothing) on every projection of every block, and a generous header. A larger file is no
    /// adapter of this model, and reading it whole would only exhaust memory.
    static func largestWeightsFile(for base: BaseModelShape) -> Int {
        let perBlock = base.projections.values.reduce(0) { $0 + min($1.input, $1.output) * ($1.input + $1.output) }
        return 4 * base.blockCount * perBlock + (1 << 20)
    }

    /// The largest configuration file read: a few kilobytes in practice.
    static let largestConfigFile = 1 << 20

    static func files(_ directory: URL, weights: String, config: String, base: BaseModelShape) throws -> (Data, Data) {
        func read(_ name: String, limit: Int) throws -> Data {
            let url = directory.appendingPathComponent(name)
            if let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int, size > limit {
                throw AdapterExchangeError.io("\(name) in \(directory.lastPathComponent) is \(size) bytes, more than any adapter of this "
                                              + "base model can hold (\(limit)); pass the adapter's own directory")
            }
            let data: Data?
            do { data = try AtomicFile.read(url) } catch {
                throw AdapterExchangeError.io("cannot read \(name) in \(directory.lastPathComponent): \(error)")
            }
            guard let data else { throw AdapterExchangeError.missingFile(directory: directory.lastPathComponent, file: name) }
            return data
        }
        return (try read(weights, limit: largestWeightsFile(for: base)), try read(config, limit: largestConfigFile))
    }
}
