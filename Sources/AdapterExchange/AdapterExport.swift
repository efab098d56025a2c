import AdaptCore
import Adapters
import Foundation
import Model

/// The formats an adapter leaves adapt in.
public enum ExchangeFormat: String, Sendable, CaseIterable {
    case ggufLoRA = "gguf-lora", peft, mlx
}

/// Writing an adapt adapter for another tool.
public enum AdapterExport {
    public struct Result: Sendable {
        /// What was written: the GGUF file, or the directory of a PEFT or mlx export.
        public var path: URL
        public var files: [URL]
        /// The weights digest of the export as an import reads it back (equal to `sourceDigest` in f32).
        public var digest: Digest
        /// The weights digest of the adapter exported.
        public var sourceDigest: Digest
    }

    /// Writes `adapter` (made on `base`) to `out` in `format`, each file atomically, then reads the export back
    /// as an import would, so what is reported is what another tool gets.
    public static func export(_ adapter: AdapterFile, base: BaseModelShape, format: ExchangeFormat,
                              precision: GGUFLoRA.Precision = .f32, to out: URL) throws -> Result {
        guard adapter.metadata.baseModelDigest == base.digest else {
            throw AdapterExchangeError.modelIsNotTheBase(adapter: "the adapter", model: base.digest.hex, base: adapter.metadata.baseModelDigest.hex)
        }
        let portable = PortableAdapter(file: adapter)
        let names = try base.names
        // Only names the model knows go into the message: anything else is the file's text, named by its tensor below.
        let unnamed = portable.targets.filter { names.gguf[$0] == nil && Projection(rawValue: $0) != nil }
        guard unnamed.isEmpty else { throw AdapterExchangeError.targetsWithoutNames(architecture: base.architecture, targets: unnamed) }
        let files: [(URL, Data)]
        switch format {
        case .ggufLoRA:
            files = [(out, try GGUFLoRA.data(portable, base: base, precision: precision))]
        case .peft:
            let (weights, config) = try PEFTFormat.files(portable, base: base)
            files = [(out.appendingPathComponent(PEFTFormat.weightsFile), weights), (out.appendingPathComponent(PEFTFormat.configFile), config)]
        case .mlx:
            let (weights, config) = try MLXFormat.files(portable, base: base)
            files = [(out.appendingPathComponent(MLXFormat.weightsFile), weights), (out.appendingPathComponent(MLXFormat.configFile), config)]
        }
        if format != .ggufLoRA { try makeDirectory(out) }
        for (url, data) in files {
            do { try AtomicFile.write(data, to: url) } catch {
                throw AdapterExchangeError.io("cannot write \(url.lastPathComponent) in \(url.deletingLastPathComponent().path): \(error); check the path and its permissions")
            }
        }
        let readBack = try AdapterImport.read(format: format, at: out, base: base, expectedRank: portable.rank)
        return Result(path: out, files: files.map(\.0), digest: readBack.weightsDigest, sourceDigest: portable.weightsDigest)
    }

    static func makeDirectory(_ url: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw AdapterExchangeError.io("\(url.path) is a file; a PEFT or mlx export is a directory, pass a directory path")
            }
            return
        }
        // 0700 with every missing parent, whatever the umask: the weights are trained on the user's text.
        do { try PrivateFiles.createDirectory(url) } catch {
            throw AdapterExchangeError.io("cannot create the directory \(url.path); check the path and its permissions")
        }
    }
}
