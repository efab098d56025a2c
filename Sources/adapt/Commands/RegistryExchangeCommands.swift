import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt registry export` and the `--from-…` sources of `adapt registry add`: adapters to and from llama.cpp
/// (GGUF-LoRA), Hugging Face PEFT and mlx-lm. The formats live in Adapters and AdapterExchange, the work in
/// `RegistryService`; this file only reads the options and prints.
enum RegistryExchangeCommands {
    /// The base model an export is shaped by and an import is checked against (`ModelCommands.model`); the
    /// service checks it exists when it needs it.
    static func modelURL(_ invocation: Invocation) throws -> URL {
        try invocation.arguments[ModelCommands.model].map { URL(fileURLWithPath: $0) }
            ?? GlobalOptions.hostState(invocation).defaultModel
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
        options: [Export.version, Export.active, Export.format, Export.out, Export.outtype, ModelCommands.model, .json],
        positionals: [PositionalSpec("LINEAGE", help: "the lineage")]
    ) { invocation in
        let args = invocation.arguments
        let lineageText = try args.required("LINEAGE")
        guard let lineage = ShortIdentifier(lineageText) else { throw UsageError("LINEAGE must be 1 to 64 letters, digits, '.', '_' or '-'") }
        let format = try args.required(Export.format)
        let out = try args.required(Export.out)
        let precision = try args[Export.outtype]
        if args.given(Export.outtype), format != .ggufLoRA { throw UsageError("--outtype applies to --format gguf-lora only; peft and mlx are f32") }
        if args.given(Export.version), args[Export.active] { throw UsageError("pass --version or --active, not both") }
        let outURL = URL(fileURLWithPath: out), model = try modelURL(invocation)
        // The model is read and the version's blob (in the state) is read: neither may be what is written.
        let inputs = [(option: "model", url: model)], state = try GlobalOptions.hostState(invocation)
        if let files = OutputKind.files(of: format) {
            try OutputPath.checkDirectory(outURL, option: "out", files: files, state: state, inputs: inputs)
        } else {
            try OutputPath.check(outURL, option: "out", kind: .ggufLoRA, state: state, inputs: inputs)
        }
        let registry = try RegistryCommands.readingRegistry(invocation)
        let request = RegistryService.ExportRequest(lineage: lineage, version: try args[Export.version], format: format,
                                                    precision: precision, out: outURL, model: model)
        let exported = try RegistryService.export(request, from: registry)
        let (version, result) = (exported.version, exported.result)
        if args[.json] {
            Console.print(JSON.pretty(ExportJSON(
                lineage: lineage.value, version: version.name, format: format.rawValue, path: result.path.path,
                digest: result.digest.hex, source_digest: result.sourceDigest.hex,
                outtype: format == .ggufLoRA ? precision.rawValue : nil, files: result.files.map(\.path))))
            return
        }
        Console.print("exported \(lineage)/\(version.name) as \(format.rawValue) to \(TerminalText.escaped(result.path.path)) (weights \(result.digest.short))")
    }

    /// The options of `registry export`; the checks of the version number wait until the registry is open.
    enum Export {
        static let version = Option<Int?>("version", value: "N", default: nil,
                                          help: "the version to export (vN or N; default: the active one)") { text in
            guard let number = Int(text.hasPrefix("v") ? String(text.dropFirst()) : text), number >= 1 else {
                throw UsageError("expects N or vN with N ≥ 1")
            }
            return number
        }
        static let active = Flag("active", help: "export the lineage's active version (the default)")
        static let format = Option<ExchangeFormat?>("format", value: "F", default: nil, help: "gguf-lora, peft or mlx") { text in
            guard let format = ExchangeFormat(rawValue: text) else { throw UsageError("must be gguf-lora, peft or mlx") }
            return format
        }
        static let out = Option<String?>("out", value: "PATH", default: nil,
                                         help: "the file (gguf-lora) or directory (peft, mlx) to write") { text in
            guard !text.isEmpty else { throw UsageError("must name a path") }
            return text
        }
        /// No default in help: the help text says it, beside the two other types.
        static let outtype = Option<RegistryService.ExportPrecision>("outtype", value: "T", default: .f32,
                                                        help: "gguf-lora tensor type: f32 (default), f16 or q8_0") { text in
            guard let precision = RegistryService.ExportPrecision(rawValue: text) else { throw UsageError("must be f32, f16 or q8_0") }
            return precision
        }
    }

    /// The source `registry add` was given with --from-gguf-lora, --from-peft or --from-mlx, if any.
    static func source(_ invocation: Invocation) throws -> (ExchangeFormat, String)? {
        let options: [(ExchangeFormat, Option<String?>)] = [(.ggufLoRA, fromGGUFLoRA), (.peft, fromPEFT), (.mlx, fromMLX)]
        let given = try options.compactMap { format, option in try invocation.arguments[option].map { (format, $0) } }
        guard given.count <= 1 else { throw UsageError("pass one of --from-gguf-lora, --from-peft and --from-mlx") }
        return given.first
    }

    static let fromGGUFLoRA = Option<String?>("from-gguf-lora", value: "FILE",
                                              help: "import a GGUF-LoRA adapter (llama.cpp's converter's output)")
    static let fromPEFT = Option<String?>("from-peft", value: "DIR",
                                          help: "import a PEFT LoRA directory (adapter_model.safetensors, adapter_config.json)")
    static let fromMLX = Option<String?>("from-mlx", value: "DIR",
                                         help: "import an mlx-lm adapter directory (adapters.safetensors, adapter_config.json)")
    static let importOptions: [any OptionDeclaration] = [fromGGUFLoRA, fromPEFT, fromMLX, ModelCommands.model, ModelCommands.chatFormat]
}
