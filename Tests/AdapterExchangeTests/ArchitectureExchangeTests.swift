import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Model
import Testing
import TestSupport

// Adapters of qwen2, qwen3, gemma3 and phi3 leave and come back under each tool's names for those architectures,
// and llama.cpp applies their GGUF-LoRA export as adapt does; phi3's pairs are on its fused qkv and gate_up.

extension ExchangeCLI {
    /// A tiny random-weight model of one architecture variant, written into models/.
    func tinyModel(seed: UInt64, variant: String) throws -> URL {
        try FileManager.default.createDirectory(at: dir.state.models, withIntermediateDirectories: true)
        let url = dir.state.models.appendingPathComponent("tiny-\(variant).gguf")
        try TinyModel(seed: seed, variant: variant).write(to: url)
        return url
    }
}

private let allTargets = ["q", "k", "v", "o", "gate", "up", "down"]

/// Every target an adapter of `variant` can have: phi3 adapts its fused tensors whole.
private func allTargets(_ variant: String) -> [String] { variant == "phi3" ? ["qkv", "o", "gate_up", "down"] : allTargets }

@Test(arguments: ["qwen2", "qwen3", "gemma3"])
func adaptersOfOtherArchitecturesTravelUnderHuggingFaceNamesInHuggingFaceRowOrder(variant: String) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 4, variant: variant)
    let base = try BaseModelShape(model: model)
    #expect(base.architecture == variant)
    let adapter = randomAdapter(base: base, rank: 4, alpha: 8, targets: allTargets, seed: 21)
    try cli.register(adapter, lineage: "mail", name: "a.bin")
    let digest = PortableAdapter(file: adapter).weightsDigest.hex
    for format in ExchangeFormat.allCases {
        let out = cli.path(format == .ggufLoRA ? "mail.gguf" : "mail-\(format.rawValue)")
        let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", format.rawValue, "--out", out, "--model", model.path])
        #expect(exported["digest"]?.stringValue == digest, "\(variant) \(format)")
        let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
        let imported = try cli.json(["registry", "add", "--lineage", "mail", option, out, "--model", model.path])
        #expect(imported["weights_digest"]?.stringValue == digest, "\(variant) \(format)")
    }
    // These converters do not permute q and k (NEOX RoPE rotates halves, as Hugging Face does): PEFT's and
    // mlx-lm's B of q is adapt's, in the same row order.
    let qb = adapter.tensors.values[adapter.tensors.names.firstIndex(of: "blk.1.q.lora_b")!]
    let peft = try Safetensors(data: try Data(contentsOf: cli.dir.file("mail-peft/adapter_model.safetensors")), name: "peft")
    #expect(peft.tensor(named: "base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight")?.values == qb)
    #expect(peft.tensor(named: "base_model.model.model.layers.1.mlp.gate_proj.lora_A.weight")?.shape == [4, base.projections["gate"]!.input])
    let mlx = try Safetensors(data: try Data(contentsOf: cli.dir.file("mail-mlx/adapters.safetensors")), name: "mlx")
    let (qOut, _) = base.projections["q"]!
    let mlxQB = try #require(mlx.tensor(named: "model.layers.1.self_attn.q_proj.lora_b"))
    #expect(mlxQB.shape == [4, qOut])
    // mlx-lm keeps B transposed: (rank, out).
    #expect((0..<qOut).allSatisfy { row in (0..<4).allSatisfy { c in mlxQB.values[c * qOut + row] == qb[row * 4 + c] } })
    let gguf = try GGUFFile(url: cli.dir.file("mail.gguf"))
    #expect(gguf.string("general.architecture") == variant)
    #expect(gguf.tensor(named: "blk.1.ffn_down.weight.lora_b") != nil && gguf.tensor(named: "blk.0.attn_q.weight.lora_a") != nil)
}

@Test(arguments: ["qwen2", "qwen3", "gemma3", "phi3"])
func llamaCppAppliesTheGGUFLoRAExportOfOtherArchitecturesAsAdaptDoes(variant: String) throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 5, variant: variant)
    let base = try BaseModelShape(model: model)
    let adapter = randomAdapter(base: base, rank: 4, alpha: 8, targets: allTargets(variant), seed: 13, bScale: 0.5)
    let adapterFile = cli.dir.file("adapter.bin")
    try adapter.write(to: adapterFile)
    #expect(try cli.run(["registry", "add", adapterFile.path, "--lineage", "mail"]).status == 0)
    let gguf = cli.dir.file("mail.gguf")
    #expect(try cli.run(["registry", "export", "mail", "--version", "1", "--format", "gguf-lora", "--out", gguf.path, "--model", model.path]).status == 0)

    var prompts: [[Int]] = [], wanted: [[Int]] = [], ours: [[Double]] = [], ourTop1: [Int] = [], ourBaseTop1: [Int] = []
    for prompt in ["hello world", "the cat sat on", "abc def ghi", "one two three four"] {
        func logits(_ adapter: URL?) throws -> (ids: [Int], top: [(id: Int, logit: Double)]) {
            let document = try cli.json(["logits", "--prompt", prompt, "--top", "5", "--model", model.path]
                                        + (adapter.map { ["--adapter", $0.path] } ?? []))
            let ids = try #require(document["ids"]?.arrayValue).compactMap(\.intValue)
            return (ids, try #require(document["top"]?.arrayValue).map { ($0["id"]!.intValue!, $0["logit"]!.doubleValue!) })
        }
        let adapted = try logits(adapterFile), plain = try logits(nil)
        prompts.append(adapted.ids)
        wanted.append(adapted.top.map(\.id))
        ours.append(adapted.top.map(\.logit))
        ourTop1.append(adapted.top[0].id)
        ourBaseTop1.append(plain.top[0].id)
    }
    let theirs = try llamaCpp(model: model, lora: gguf, prompts: prompts, ids: wanted, scratch: cli.dir)
    let theirsBase = try llamaCpp(model: model, lora: nil, prompts: prompts, ids: wanted, scratch: cli.dir)
    #expect(theirs.top1 == ourTop1, "\(variant): llama.cpp \(theirs.top1), adapt \(ourTop1)")
    let gap = zip(ours, theirs.logits).map { zip($0, $1).map { abs($0 - $1) }.max() ?? 0 }.max() ?? 0
    let effect = zip(theirs.logits, theirsBase.logits).map { zip($0, $1).map { abs($0 - $1) }.max() ?? 0 }.max() ?? 0
    print("\(variant): llama.cpp − adapt logits at most \(gap) apart, the adapter moves them by \(effect)")
    // The tiny models are f32: llama.cpp and adapt differ by rounding only, far below what the adapter moves.
    #expect(gap < 1e-2 && effect > 100 * gap, "\(variant): gap \(gap), adapter effect \(effect)")
}

/// phi3's fused pairs travel whole: GGUF-LoRA on `attn_qkv` and `ffn_up`, PEFT and mlx-lm on `qkv_proj` and
/// `gate_up_proj`, with B's rows in the base's order (q, k, v; gate, up) and back to the same weights.
@Test func phi3AdaptersTravelOnTheFusedTensorsUnderEveryToolsNames() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 4, variant: "phi3")
    let base = try BaseModelShape(model: model)
    #expect(base.architecture == "phi3")
    let adapter = randomAdapter(base: base, rank: 4, alpha: 8, targets: allTargets("phi3"), seed: 21)
    try cli.register(adapter, lineage: "mail", name: "a.bin")
    let digest = PortableAdapter(file: adapter).weightsDigest.hex
    for format in ExchangeFormat.allCases {
        let out = cli.path(format == .ggufLoRA ? "mail.gguf" : "mail-\(format.rawValue)")
        let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", format.rawValue, "--out", out, "--model", model.path])
        #expect(exported["digest"]?.stringValue == digest, "\(format)")
        let option = ["gguf-lora": "--from-gguf-lora", "peft": "--from-peft", "mlx": "--from-mlx"][format.rawValue]!
        let imported = try cli.json(["registry", "add", "--lineage", "mail", option, out, "--model", model.path])
        #expect(imported["weights_digest"]?.stringValue == digest, "\(format)")
    }
    let (qkvOut, width) = base.projections["qkv"]!
    #expect(qkvOut == base.projections["q"]!.output + 2 * base.projections["k"]!.output && width == base.projections["q"]!.input)
    let qkvB = adapter.tensors.values[adapter.tensors.names.firstIndex(of: "blk.1.qkv.lora_b")!]
    let gateUpA = adapter.tensors.values[adapter.tensors.names.firstIndex(of: "blk.0.gate_up.lora_a")!]
    let peft = try Safetensors(data: try Data(contentsOf: cli.dir.file("mail-peft/adapter_model.safetensors")), name: "peft")
    #expect(peft.tensor(named: "base_model.model.model.layers.1.self_attn.qkv_proj.lora_B.weight")?.values == qkvB)
    #expect(peft.tensor(named: "base_model.model.model.layers.0.mlp.gate_up_proj.lora_A.weight")?.values == gateUpA)
    #expect(peft.tensor(named: "base_model.model.model.layers.0.mlp.gate_up_proj.lora_B.weight")?.shape == [base.projections["gate_up"]!.output, 4])
    #expect(peft.tensors.allSatisfy { $0.name.contains("qkv_proj") || $0.name.contains("o_proj") || $0.name.contains("gate_up_proj") || $0.name.contains("down_proj") })
    let config = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: cli.dir.file("mail-peft/adapter_config.json")))
    #expect(Set(config["target_modules"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"])
    let mlx = try Safetensors(data: try Data(contentsOf: cli.dir.file("mail-mlx/adapters.safetensors")), name: "mlx")
    let mlxB = try #require(mlx.tensor(named: "model.layers.1.self_attn.qkv_proj.lora_b"))
    #expect(mlxB.shape == [4, qkvOut])
    #expect((0..<qkvOut).allSatisfy { row in (0..<4).allSatisfy { c in mlxB.values[c * qkvOut + row] == qkvB[row * 4 + c] } })
    let gguf = try GGUFFile(url: cli.dir.file("mail.gguf"))
    #expect(gguf.string("general.architecture") == "phi3")
    #expect(gguf.tensor(named: "blk.1.attn_qkv.weight.lora_b")?.dimensions == [4, qkvOut])
    #expect(gguf.tensor(named: "blk.0.ffn_up.weight.lora_a")?.dimensions == [width, 4])
    #expect(gguf.tensors.allSatisfy { !$0.name.contains("attn_q.") && !$0.name.contains("ffn_gate") })
}

/// An adapter of phi3 with q, k, v adapted apart (as adapt trained them before the fused pairs) has no name in
/// the other tools: refused naming its targets and the way out, nothing written.
@Test func phi3AdaptersWithSeparateQueryKeyValuePairsAreRefusedOnExport() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 4, variant: "phi3")
    let base = try BaseModelShape(model: model)
    try cli.register(randomAdapter(base: base, rank: 4, seed: 2), lineage: "mail", name: "a.bin")
    for format in ExchangeFormat.allCases {
        let out = cli.path("out-\(format.rawValue)")
        let result = try cli.run(["registry", "export", "mail", "--version", "1", "--format", format.rawValue, "--out", out, "--model", model.path])
        #expect(result.status == 1, "\(format): \(result.stderr)")
        #expect(result.stderr.contains("q, k, v") && result.stderr.contains("phi3") && result.stderr.contains("train the adapter again"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
