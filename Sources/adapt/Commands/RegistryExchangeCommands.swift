import AdaptCore
import AdapterExchange
import Adapters
import CommandLineKit
import Foundation
import Registry

/// `adapt registry export` and the `--from-…` sources of `adapt registry add`: adapters to and from llama.cpp
/// (GGUF-LoRA), Hugging Face PEFT and mlx-lm. The formats live in Adapters and AdapterExchange; this file only
/// reads the options and prints.
enum RegistryExchangeCommands {
    static let modelOption = OptionSpec("model", value: "FILE",
                                        help: "the base model GGUF (default: models/\(DefaultModel.fileName) in the state directory)")

    static func modelURL(_ invocation: Invocation) throws -> URL {
        let url = try invocation.arguments.string("model").map { URL(fileURLWithPath: $0) }
            ?? GlobalOptions.stateDirectory(invocation).defaultModel
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreError.fileUnreadable(path: url.path, reason: "no such file; pass the base model with --model")
        }
        return url
    }

    struct ExportJSON: Encodable {
        let lineage: String
        let version: String
        let format: String
        let path: String
        /// The weights digest of the export as an import reads it back.
        let digest: String
        /// The weights digest of the registered version (equal to `digest` in f32).
        let source_digest: String
        let outtype: String?
        let files: [String]
    }

    static let export = Command(
        "registry export", summary: "write a version as a GGUF-LoRA file (llama.cpp, Ollama) or a PEFT or mlx-lm directory",
        discussion: """
            gguf-lora writes the file llama.cpp's convert_lora_to_gguf.py writes (llama-server --lora, Ollama's \
            ADAPTER), in f32 unless --outtype says f16 or q8_0; peft writes adapter_model.safetensors and \
            adapter_config.json into the directory --out; mlx writes adapters.safetensors and adapter_config.json. \
            The export is read back before the command reports it; digest is its weights digest.
            """,
        options: [
            OptionSpec("version", value: "N", help: "the version to export (vN or N; default: the active one)"),
            .flag("active", help: "export the lineage's active version (the default)"),
            OptionSpec("format", value: "F", help: "gguf-lora, peft or mlx"),
            OptionSpec("out", value: "PATH", help: "the file (gguf-lora) or directory (peft, mlx) to write"),
            OptionSpec("outtype", value: "T", help: "gguf-lora tensor type: f32 (default), f16 or q8_0"),
            modelOption,
            .json,
        ],
        positionals: [PositionalSpec("LINEAGE", help: "the lineage")]
    ) { invocation in
        let args = invocation.arguments
        let lineageText = try args.required("LINEAGE")
        guard let lineage = ShortIdentifier(lineageText) else { throw UsageError("LINEAGE must be 1 to 64 letters, digits, '.', '_' or '-'") }
        let formatText = try args.required("format")
        guard let format = ExchangeFormat(rawValue: formatText) else { throw UsageError("--format must be gguf-lora, peft or mlx") }
        let out = try args.required("out")
        guard !out.isEmpty else { throw UsageError("--out must name a path") }
        let precisionText = args.string("outtype")
        guard let precision = GGUFLoRA.Precision(rawValue: precisionText ?? "f32") else { throw UsageError("--outtype must be f32, f16 or q8_0") }
        if precisionText != nil, format != .ggufLoRA { throw UsageError("--outtype applies to --format gguf-lora only; peft and mlx are f32") }
        if args.string("version") != nil, args.flag("active") { throw UsageError("pass --version or --active, not both") }
        let registry = try RegistryCommands.readingRegistry(invocation)
        let version: AdapterVersion
        if let text = args.string("version") {
            guard let number = Int(text.hasPrefix("v") ? String(text.dropFirst()) : text), number >= 1 else {
                throw UsageError("--version expects N or vN with N ≥ 1")
            }
            version = try registry.version(VersionReference(lineage: lineage, number: number))
        } else {
            guard let active = try registry.active(lineage: lineage) else {
                throw RegistryExchangeError.noActiveVersion(lineage: lineage.value)
            }
            version = active
        }
        let (adapter, _) = try AdapterFile.decode(try registry.adapterData(version), name: "\(lineage)/\(version.name)")
        let base = try BaseModelShape(model: try modelURL(invocation))
        let result = try AdapterExport.export(adapter, base: base, format: format, precision: precision,
                                              to: URL(fileURLWithPath: out))
        if args.flag("json") {
            Console.print(JSON.pretty(ExportJSON(
                lineage: lineage.value, version: version.name, format: format.rawValue, path: result.path.path,
                digest: result.digest.hex, source_digest: result.sourceDigest.hex,
                outtype: format == .ggufLoRA ? precision.rawValue : nil, files: result.files.map(\.path))))
            return
        }
        Console.print("exported \(lineage)/\(version.name) as \(format.rawValue) to \(result.path.path) (weights \(result.digest.short))")
    }

    /// The source `registry add` was given with --from-gguf-lora, --from-peft or --from-mlx, if any.
    static func source(_ invocation: Invocation) throws -> (ExchangeFormat, String)? {
        let given: [(ExchangeFormat, String)] = [(.ggufLoRA, "from-gguf-lora"), (.peft, "from-peft"), (.mlx, "from-mlx")]
            .compactMap { format, option in invocation.arguments.string(option).map { (format, $0) } }
        guard given.count <= 1 else { throw UsageError("pass one of --from-gguf-lora, --from-peft and --from-mlx") }
        return given.first
    }

    static let importOptions: [OptionSpec] = [
        OptionSpec("from-gguf-lora", value: "FILE", help: "import a GGUF-LoRA adapter (llama.cpp's converter's output)"),
        OptionSpec("from-peft", value: "DIR", help: "import a PEFT LoRA directory (adapter_model.safetensors, adapter_config.json)"),
        OptionSpec("from-mlx", value: "DIR", help: "import an mlx-lm adapter directory (adapters.safetensors, adapter_config.json)"),
        modelOption,
    ]

    /// An adapter from another tool as an adapt adapter file for `lineage`: checked against the base model
    /// (the lineage's, which --model must be when the lineage has versions) and the lineage's rank.
    static func importedAdapter(format: ExchangeFormat, path: String, lineage: ShortIdentifier,
                                registry: AdapterRegistry, invocation: Invocation) throws -> (data: Data, metadata: AdapterMetadata, weights: Digest) {
        guard !path.isEmpty else { throw UsageError("an empty path names no adapter; pass its file or directory") }
        let model = try modelURL(invocation)
        let base = try BaseModelShape(model: model)
        var expectedRank: Int?
        if let latest = try registry.versions(lineage: lineage).last {
            let (file, _) = try AdapterFile.decode(try registry.adapterData(latest), name: "\(lineage)/\(latest.name)")
            guard file.metadata.baseModelDigest == base.digest else {
                throw RegistryExchangeError.lineageOnOtherBase(lineage: lineage.value, lineageBase: file.metadata.baseModelDigest.hex,
                                                              model: base.digest.hex)
            }
            expectedRank = file.metadata.rank
        }
        let portable = try AdapterImport.read(format: format, at: URL(fileURLWithPath: path), base: base, expectedRank: expectedRank)
        let file = try AdapterImport.adapterFile(portable, format: format, base: base, model: model)
        let metadata = AdapterMetadata(baseModel: base.digest, chatConvention: ShortIdentifier(file.metadata.chatConvention))
        return (file.encoded().data, metadata, portable.weightsDigest)
    }

    /// Rewrites `state/exports/<lineage>/` after the active pointer moved, and prints how to serve it. The
    /// move is already committed: a failure here is reported, not thrown.
    static func updateActiveExport(lineage: ShortIdentifier, invocation: Invocation) {
        do {
            let state = try GlobalOptions.stateDirectory(invocation)
            let registry = try RegistryCommands.readingRegistry(invocation)
            for line in try ActiveAdapterExport.update(lineage: lineage, registry: registry, model: state.defaultModel, state: state) {
                Console.error("adapt: \(line)")
            }
        } catch {
            Console.error("adapt: the active export of \(lineage) was not updated: \(error)")
        }
    }
}

enum RegistryExchangeError: Error, CustomStringConvertible {
    case noActiveVersion(lineage: String)
    case lineageOnOtherBase(lineage: String, lineageBase: String, model: String)

    var description: String {
        switch self {
        case let .noActiveVersion(lineage):
            return "lineage \(lineage) has no active version; pass --version N"
        case let .lineageOnOtherBase(lineage, lineageBase, model):
            return "lineage \(lineage) is on base model \(lineageBase.prefix(12)), the model given is \(model.prefix(12)); pass the lineage's base model with --model"
        }
    }
}
