import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Testing
import TestSupport

// An adapter that does not fit the lineage is refused with a message that names the problem, exit 1, and the
// registry keeps exactly what it had.

@Test(arguments: ExchangeFormat.allCases)
func anAdapterOfAnotherBaseModelIsRefused(format: ExchangeFormat) throws {
    let cli = ExchangeCLI()
    let other = try cli.tinyModel(seed: 1, name: "other.gguf")
    let mine = try cli.tinyModel(seed: 2, name: "mine.gguf")
    try cli.register(randomAdapter(base: try BaseModelShape(model: other), rank: 4, seed: 1), lineage: "elsewhere", name: "o.bin")
    try cli.register(randomAdapter(base: try BaseModelShape(model: mine), rank: 4, seed: 2), lineage: "mail", name: "m.bin")
    let out = cli.path("export-\(format.rawValue)")
    #expect(try cli.run(["registry", "export", "elsewhere", "--version", "1", "--format", format.rawValue, "--out", out, "--model", other.path]).status == 0)
    let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
    let refused = try cli.run(["registry", "add", "--lineage", "mail", option, out, "--model", mine.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("was made for base model") && refused.stderr.contains("--model"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 2)
    // The lineage's own base is checked too: the other model given for a lineage on mine.
    let wrongModel = try cli.run(["registry", "add", "--lineage", "mail", option, out, "--model", other.path])
    #expect(wrongModel.status == 1 && wrongModel.stderr.contains("lineage mail is on base model"), "\(wrongModel.stderr)")
    #expect(try cli.versionCount() == 2)
}

@Test func anAdapterMadeElsewhereForOtherShapesIsRefusedByItsShapes() throws {
    // A PEFT file with no adapt metadata (trained elsewhere) for a wider model: the shapes give it away.
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    var wider = base
    wider.digest = Digest.sha256("another model")
    wider.projections = base.projections.mapValues { ($0.output * 2, $0.input * 2) }
    let (weights, config) = try PEFTFormat.files(PortableAdapter(file: randomAdapter(base: wider, rank: 4, seed: 3)), base: wider)
    var file = try Safetensors(data: weights, name: "w")
    file.metadata = ["format": "pt"]
    let directory = cli.dir.file("peft")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try file.encoded().write(to: directory.appendingPathComponent("adapter_model.safetensors"))
    try config.write(to: directory.appendingPathComponent("adapter_config.json"))
    let refused = try cli.run(["registry", "add", "--lineage", "mail", "--from-peft", directory.path, "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("has shape") && refused.stderr.contains("the base model needs"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 0)
}

@Test(arguments: ExchangeFormat.allCases)
func anAdapterOfAnotherRankThanTheLineagesIsRefused(format: ExchangeFormat) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    try cli.register(randomAdapter(base: base, rank: 8, seed: 1), lineage: "mail", name: "r8.bin")
    try cli.register(randomAdapter(base: base, rank: 4, seed: 2), lineage: "rank4", name: "r4.bin")
    let out = cli.path("r4-\(format.rawValue)")
    #expect(try cli.run(["registry", "export", "rank4", "--version", "1", "--format", format.rawValue, "--out", out, "--model", model.path]).status == 0)
    let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
    let refused = try cli.run(["registry", "add", "--lineage", "mail", option, out, "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("has LoRA rank 4, the lineage's adapters have rank 8"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 2)
}

@Test(arguments: ["peft", "mlx"])
func aTruncatedSafetensorsIsRefused(format: String) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    try cli.register(randomAdapter(base: try BaseModelShape(model: model), rank: 4, seed: 1), lineage: "mail", name: "a.bin")
    let out = cli.dir.file(format)
    #expect(try cli.run(["registry", "export", "mail", "--version", "1", "--format", format, "--out", out.path, "--model", model.path]).status == 0)
    let weights = out.appendingPathComponent(format == "peft" ? "adapter_model.safetensors" : "adapters.safetensors")
    let whole = try Data(contentsOf: weights)
    try whole.prefix(whole.count - 100).write(to: weights)
    let refused = try cli.run(["registry", "add", "--lineage", "mail", "--from-\(format)", out.path, "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("is truncated"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 1)
}

@Test func aGGUFThatIsAModelNotAnAdapterIsRefused() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let refused = try cli.run(["registry", "add", "--lineage", "mail", "--from-gguf-lora", model.path, "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("is not a LoRA adapter: it is a whole model"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 0)
}

@Test func anImportedVersionGoesThroughTheGateBeforePromotion() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    try cli.register(randomAdapter(base: try BaseModelShape(model: model), rank: 4, seed: 1), lineage: "source", name: "a.bin")
    #expect(try cli.run(["registry", "export", "source", "--version", "1", "--format", "gguf-lora", "--out", cli.path("a.gguf"), "--model", model.path]).status == 0)
    let imported = try cli.json(["registry", "add", "--lineage", "mail", "--from-gguf-lora", cli.path("a.gguf"), "--model", model.path])
    #expect(imported["active"] == .bool(false))
    let refused = try cli.run(["registry", "promote", "mail/v1"])
    #expect(refused.status == 1 && refused.stderr.contains("gate"), "\(refused.stderr)")
}

@Test func anExportWithTheWrongModelOrNoActiveVersionIsRefused() throws {
    let cli = ExchangeCLI()
    let mine = try cli.tinyModel(seed: 2, name: "mine.gguf")
    let other = try cli.tinyModel(seed: 3, name: "other.gguf")
    try cli.register(randomAdapter(base: try BaseModelShape(model: mine), rank: 4, seed: 1), lineage: "mail", name: "a.bin")
    let wrong = try cli.run(["registry", "export", "mail", "--version", "1", "--format", "peft", "--out", cli.path("p"), "--model", other.path])
    #expect(wrong.status == 1 && wrong.stderr.contains("was trained on base model") && wrong.stderr.contains("--model"), "\(wrong.stderr)")
    #expect(!FileManager.default.fileExists(atPath: cli.path("p")))
    let inactive = try cli.run(["registry", "export", "mail", "--active", "--format", "mlx", "--out", cli.path("m"), "--model", mine.path])
    #expect(inactive.status == 1 && inactive.stderr.contains("has no active version; pass --version N"), "\(inactive.stderr)")
}

// Numbers no adapter can be applied with are refused at import, naming the field, before anything is registered:
// an alpha of 3e38 or 1e19 used to be accepted, and exporting it to PEFT then trapped.

/// A directory `format` export of a rank-4 adapter, its config changed by `edit`.
private func exportedDirectory(_ cli: ExchangeCLI, model: URL, format: String, edit: (inout [String: JSONValue]) -> Void) throws -> String {
    try cli.register(randomAdapter(base: try BaseModelShape(model: model), rank: 4, seed: 1), lineage: "source", name: "s.bin")
    let out = cli.dir.file(format)
    #expect(try cli.run(["registry", "export", "source", "--version", "1", "--format", format, "--out", out.path, "--model", model.path]).status == 0)
    let config = out.appendingPathComponent(format == "peft" ? PEFTFormat.configFile : MLXFormat.configFile)
    var object = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: config)).objectValue ?? [:]
    edit(&object)
    try JSONEncoder().encode(JSONValue.object(object)).write(to: config)
    return out.path
}

private func expectRefusedNaming(_ field: String, _ cli: ExchangeCLI, _ arguments: [String], versionsBefore: Int) throws {
    let refused = try cli.run(arguments)
    #expect(refused.status == 1, "exit \(refused.status): \(refused.stderr)")
    #expect(refused.stderr.contains(field) && !refused.stderr.contains("Fatal error"), "\(refused.stderr)")
    #expect(try cli.versionCount() == versionsBefore)
}

@Test func aGGUFLoRAWithAnAbsurdAlphaIsRefusedNamingTheField() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    var adapter = PortableAdapter(file: randomAdapter(base: base, rank: 4, seed: 1))
    adapter.alpha = 3e38
    let path = cli.path("absurd.gguf")
    try GGUFLoRA.data(adapter, base: base, precision: .f32).write(to: URL(fileURLWithPath: path))
    try expectRefusedNaming("adapter.lora.alpha", cli, ["registry", "add", "--lineage", "mail", "--from-gguf-lora", path, "--model", model.path],
                            versionsBefore: 0)
}

@Test(arguments: [1e19, 3e38, 0])
func aPEFTDirectoryWithAnAbsurdAlphaIsRefusedNamingTheField(alpha: Double) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let directory = try exportedDirectory(cli, model: model, format: "peft") { $0["lora_alpha"] = .double(alpha) }
    try expectRefusedNaming("lora_alpha", cli, ["registry", "add", "--lineage", "mail", "--from-peft", directory, "--model", model.path],
                            versionsBefore: 1)
}

@Test func anMLXDirectoryWhoseScaleMakesAnAbsurdAlphaIsRefusedNamingTheField() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let directory = try exportedDirectory(cli, model: model, format: "mlx") { config in
        var parameters = config["lora_parameters"]?.objectValue ?? [:]
        parameters["scale"] = .double(1e19 / 4)
        config["lora_parameters"] = .object(parameters)
    }
    try expectRefusedNaming("lora_parameters.scale", cli, ["registry", "add", "--lineage", "mail", "--from-mlx", directory, "--model", model.path],
                            versionsBefore: 1)
}

@Test(arguments: ["peft", "mlx"])
func aDropoutThatIsNotAProbabilityIsRefusedNamingTheField(format: String) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let directory = try exportedDirectory(cli, model: model, format: format) { config in
        if format == "peft" {
            config["lora_dropout"] = .double(1.5)
        } else {
            var parameters = config["lora_parameters"]?.objectValue ?? [:]
            parameters["dropout"] = .int(-1)
            config["lora_parameters"] = .object(parameters)
        }
    }
    let field = format == "peft" ? "lora_dropout" : "lora_parameters.dropout"
    try expectRefusedNaming(field, cli, ["registry", "add", "--lineage", "mail", "--from-\(format)", directory, "--model", model.path],
                            versionsBefore: 1)
}

@Test func aPEFTExportOfAWholeAlphaPastTheIntegersWritesItAsANumberWithoutATrap() throws {
    // A whole f32 past Int's range used to be converted to Int for the config, which traps.
    let cli = ExchangeCLI()
    let base = try BaseModelShape(model: try cli.tinyModel(seed: 2, name: "tiny.gguf"))
    var adapter = PortableAdapter(file: randomAdapter(base: base, rank: 4, seed: 1))
    adapter.alpha = 3e38
    let config = try JSONDecoder().decode(JSONValue.self, from: PEFTFormat.files(adapter, base: base).config)
    #expect(config["lora_alpha"] == .double(Double(Float(3e38))))
}

/// A missing import path is named as the adapter it should be, not as a model file to fetch.
@Test(arguments: ExchangeFormat.allCases)
func aMissingImportPathIsNamedAsTheAdapterItShouldBe(format: ExchangeFormat) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
    let refused = try cli.run(["registry", "add", "--lineage", "mail", option, cli.path("nothing-here"), "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("adapter") && refused.stderr.contains("no such file"), "\(refused.stderr)")
    #expect(!refused.stderr.contains("model file") && !refused.stderr.contains("fetch-model"), "\(refused.stderr)")
}

/// A weights file larger than any adapter of the base model could be is refused by its size, not read whole.
@Test(arguments: [ExchangeFormat.peft, .mlx])
func aWeightsFileLargerThanAnyAdapterOfTheModelIsRefusedUnread(format: ExchangeFormat) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 2, name: "tiny.gguf")
    let directory = URL(fileURLWithPath: cli.path("huge-\(format.rawValue)"))
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let (weights, config) = format == .peft ? (PEFTFormat.weightsFile, PEFTFormat.configFile) : (MLXFormat.weightsFile, MLXFormat.configFile)
    try Data("{}".utf8).write(to: directory.appendingPathComponent(config))
    // 64 GB of holes: nothing is stored on disk, and a whole read would exhaust the memory.
    let file = directory.appendingPathComponent(weights)
    #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
    let handle = try FileHandle(forWritingTo: file)
    try handle.truncate(atOffset: 64 << 30)
    try handle.close()
    let option = format == .peft ? "--from-peft" : "--from-mlx"
    let refused = try cli.run(["registry", "add", "--lineage", "mail", option, directory.path, "--model", model.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains("more than any adapter of this base model can hold"), "\(refused.stderr)")
    #expect(try cli.versionCount() == 0)
}
