import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Testing
import TestSupport

// Export → import through the command line gives back the same weights, in every format: the digest the export
// reports is the registered version's, and the imported version's weights digest is the export's.

@Test(arguments: ExchangeFormat.allCases)
func exportThenImportGivesTheSameWeightsDigest(format: ExchangeFormat) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 3, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    let adapter = randomAdapter(base: base, rank: 4, alpha: 12, targets: ["q", "k", "v", "o", "gate", "up", "down"], seed: 7)
    try cli.register(adapter, lineage: "mail", name: "a.bin")
    let out = cli.path(format == .ggufLoRA ? "mail.gguf" : "mail-\(format.rawValue)")
    let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", format.rawValue, "--out", out, "--model", model.path])
    #expect(exported["lineage"] == .string("mail") && exported["version"] == .string("v1") && exported["format"] == .string(format.rawValue))
    #expect(exported["path"] == .string(out))
    let digest = try #require(exported["digest"]?.stringValue)
    #expect(digest == PortableAdapter(file: adapter).weightsDigest.hex)
    #expect(exported["source_digest"]?.stringValue == digest)

    let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
    let imported = try cli.json(["registry", "add", "--lineage", "mail", option, out, "--model", model.path])
    #expect(imported["version"] == .string("v2"))
    #expect(imported["weights_digest"]?.stringValue == digest)
    #expect(imported["metadata"]?["base_model"]?.stringValue == base.digest.hex)
    // The stored version is an adapt adapter file with the same tensors, ready for generate and the gate.
    let again = try cli.json(["registry", "export", "mail", "--version", "v2", "--format", "gguf-lora", "--out", cli.path("v2.gguf"), "--model", model.path])
    #expect(again["digest"]?.stringValue == digest)
}

@Test func exportedFilesHaveTheNamesAndShapesEachToolExpects() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 3, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    let adapter = randomAdapter(base: base, rank: 4, alpha: 8, seed: 9)
    try cli.register(adapter, lineage: "mail", name: "a.bin")
    for format in ["peft", "mlx"] {
        #expect(try cli.run(["registry", "export", "mail", "--version", "1", "--format", format, "--out", cli.path(format), "--model", model.path]).status == 0)
    }
    let peft = try Safetensors(data: try Data(contentsOf: cli.dir.file("peft/adapter_model.safetensors")), name: "peft")
    #expect(peft.metadata["format"] == "pt")
    let qa = try #require(peft.tensor(named: "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"))
    let (qOut, qIn) = base.projections["q"]!
    #expect(qa.shape == [4, qIn])
    #expect(peft.tensor(named: "base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight")?.shape == [base.projections["k"]!.output, 4])
    // v is not permuted: PEFT's B of v is adapt's B byte for byte; q's B is in Hugging Face's row order.
    let vb = adapter.tensors.values[adapter.tensors.names.firstIndex(of: "blk.0.v.lora_b")!]
    #expect(peft.tensor(named: "base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight")?.values == vb)
    let qb = adapter.tensors.values[adapter.tensors.names.firstIndex(of: "blk.0.q.lora_b")!]
    #expect(peft.tensor(named: "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight")?.values
            == QueryKeyPermutation.toHuggingFace(qb, rows: qOut, columns: 4, heads: base.headCount))
    let config = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: cli.dir.file("peft/adapter_config.json")))
    #expect(config["peft_type"] == .string("LORA") && config["r"] == .int(4) && config["lora_alpha"] == .int(8))
    #expect(config["target_modules"] == .array(["q_proj", "k_proj", "v_proj", "o_proj"].map { .string($0) }))

    let mlx = try Safetensors(data: try Data(contentsOf: cli.dir.file("mlx/adapters.safetensors")), name: "mlx")
    #expect(mlx.metadata["format"] == "mlx")
    #expect(mlx.tensor(named: "model.layers.0.self_attn.q_proj.lora_a")?.shape == [qIn, 4])
    #expect(mlx.tensor(named: "model.layers.0.self_attn.q_proj.lora_b")?.shape == [4, qOut])
    let mlxConfig = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: cli.dir.file("mlx/adapter_config.json")))
    #expect(mlxConfig["lora_parameters"]?["scale"] == .double(2) || mlxConfig["lora_parameters"]?["scale"] == .int(2))
    #expect(mlxConfig["num_layers"] == .int(base.blockCount) && mlxConfig["fine_tune_type"] == .string("lora"))
}

@Test func quantizedGGUFExportsAreReadBackWithinTheirPrecision() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 3, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    try cli.register(randomAdapter(base: base, rank: 32, alpha: 32, seed: 5), lineage: "mail", name: "a.bin")
    var sizes: [String: Int] = [:]
    for type in ["f32", "f16", "q8_0"] {
        let out = cli.path("\(type).gguf")
        let exported = try cli.json(["registry", "export", "mail", "--format", "gguf-lora", "--version", "1", "--outtype", type, "--out", out, "--model", model.path])
        #expect(exported["outtype"] == .string(type))
        sizes[type] = try FileManager.default.attributesOfItem(atPath: out)[.size] as? Int
        // Rounded weights are other weights: only f32 keeps the digest.
        #expect((exported["digest"] == exported["source_digest"]) == (type == "f32"))
    }
    let f32 = try #require(sizes["f32"]), f16 = try #require(sizes["f16"]), q8 = try #require(sizes["q8_0"])
    #expect(f16 < f32 * 6 / 10 && q8 < f16 * 6 / 10, "\(sizes)")
    let usage = try cli.run(["registry", "export", "mail", "--format", "peft", "--outtype", "f16", "--out", cli.path("p")])
    #expect(usage.status == 2)
}
