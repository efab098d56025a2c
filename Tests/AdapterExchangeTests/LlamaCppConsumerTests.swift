import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Testing
import TestSupport

// The GGUF-LoRA export as llama.cpp itself applies it: llama-cpp-python loads the real model with the exported
// adapter (`Llama(model_path, lora_path=…)`) in its own process, and its next tokens are adapt's. Building
// llama-cpp-python compiles llama.cpp (10-20 minutes on 2 cores), so this live test runs in `scripts/test --peers`
// only; the default run checks the same criteria against llama.cpp's numbers recorded in a committed fixture
// (LlamaCppFixtureTests.swift).

/// A test peer's virtual environment, made once per machine by `scripts/peers NAME` (llama: llama-cpp-python,
/// compiled; gguf: gguf-py and numpy, wheels only, seconds).
func peerPython(_ name: String) throws -> URL {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let result = try Executables.run(executableAt: root.appendingPathComponent("scripts/peers"), [name])
    guard result.status == 0, let line = result.stdout.split(separator: "\n").last else {
        throw PeerFailure(reason: "scripts/peers \(name) exited \(result.status): \(result.stderr)")
    }
    return URL(fileURLWithPath: String(line)).appendingPathComponent("bin/python")
}

struct PeerFailure: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

struct LlamaCppAnswer: Decodable {
    let top1: [Int]
    let logits: [[Double]]
}

func llamaCpp(model: URL, lora: URL?, prompts: [[Int]], ids: [[Int]], scratch: TemporaryDirectory) throws -> LlamaCppAnswer {
    let request: JSONValue = .object([
        "model": .string(model.path), "lora": lora.map { .string($0.path) } ?? .null,
        "prompts": .array(prompts.map { .array($0.map { .int($0) }) }), "ids": .array(ids.map { .array($0.map { .int($0) }) }),
    ])
    let file = scratch.file("request-\(lora?.lastPathComponent ?? "base").json")
    try JSON.canonical(request).write(to: file)
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/llama_cpp_next_token.py")
    let result = try Executables.run(executableAt: try peerPython("llama"), [script.path, file.path])
    guard result.status == 0 else { throw PeerFailure(reason: "llama-cpp-python exited \(result.status): \(result.stderr)") }
    return try JSONDecoder().decode(LlamaCppAnswer.self, from: Data(result.stdout.utf8))
}

/// adapt's next-token top ids and logits for a prompt: `adapt logits --json`, with `--adapter` when given.
func adaptLogits(_ cli: ExchangeCLI, prompt: String, adapter: URL?) throws -> (ids: [Int], top: [(id: Int, logit: Double)]) {
    let document = try cli.json(["logits", "--prompt", prompt, "--top", "10", "--model", CheckoutModel.url.path]
                                + (adapter.map { ["--adapter", $0.path] } ?? []))
    let ids = try #require(document["ids"]?.arrayValue).compactMap(\.intValue)
    let top = try #require(document["top"]?.arrayValue).map { ($0["id"]!.intValue!, $0["logit"]!.doubleValue!) }
    return (ids, top)
}

let consumerPrompts = [
    "The capital of France is", "Dear team, thanks for", "def fibonacci(n):", "Once upon a time, there was",
    "The meeting is moved to", "I will be out of office until",
]

@Test(.enabled(if: CheckoutModel.isPresent, "scripts/fetch-model puts the model in state/models"))
func llamaCppAppliesTheExportedAdapterAsAdaptDoes() throws {
    let cli = ExchangeCLI()
    let base = try BaseModelShape(model: CheckoutModel.url)
    let adapter = randomAdapter(base: base, rank: 8, alpha: 16, seed: 11, bScale: 0.3)
    let adapterFile = cli.dir.file("adapter.bin")
    try adapter.write(to: adapterFile)
    #expect(try cli.run(["registry", "add", adapterFile.path, "--lineage", "mail"]).status == 0)

    var prompts: [[Int]] = [], wanted: [[Int]] = [], ours: [[Double]] = [], oursBase: [[Double]] = []
    var ourTop1: [Int] = [], ourBaseTop1: [Int] = []
    for prompt in consumerPrompts {
        let adapted = try adaptLogits(cli, prompt: prompt, adapter: adapterFile)
        let plain = try adaptLogits(cli, prompt: prompt, adapter: nil)
        prompts.append(adapted.ids)
        // The logits compared: at adapt's top 10 with the adapter, then at its top 10 with the base model.
        wanted.append(adapted.top.map(\.id) + plain.top.map(\.id))
        ourTop1.append(adapted.top[0].id)
        ourBaseTop1.append(plain.top[0].id)
        ours.append(adapted.top.map(\.logit))
        oursBase.append(plain.top.map(\.logit))
    }
    let theirsBase = try llamaCpp(model: CheckoutModel.url, lora: nil, prompts: prompts, ids: wanted, scratch: cli.dir)
    let comparison = LlamaCppComparison(ours: ours, oursBase: oursBase, ourTop1: ourTop1, ourBaseTop1: ourBaseTop1, theirsBase: theirsBase)
    comparison.checkBase()

    for outtype in GGUFLoRA.Precision.allCases {
        let gguf = cli.dir.file("mail-\(outtype.rawValue).gguf")
        let exported = try cli.run(["registry", "export", "mail", "--version", "1", "--format", "gguf-lora", "--outtype", outtype.rawValue,
                                    "--out", gguf.path, "--model", CheckoutModel.url.path])
        #expect(exported.status == 0, "\(exported.stderr)")
        let theirs = try llamaCpp(model: CheckoutModel.url, lora: gguf, prompts: prompts, ids: wanted, scratch: cli.dir)
        let size = try FileManager.default.attributesOfItem(atPath: gguf.path)[.size] as? Int ?? 0
        comparison.check(theirs, outtype: outtype, size: size, peer: "llama.cpp")
    }
}

/// The criteria of the llama.cpp consumer check, live (above) or against the committed fixture
/// (LlamaCppFixtureTests.swift). Per prompt, the compared ids are adapt's 10 largest logits with the adapter, then
/// its 10 largest without; `ours` holds adapt's logits with the adapter at the first 10, `oursBase` its logits
/// without at the last 10, and llama.cpp's answers hold its logits at all 20.
struct LlamaCppComparison {
    let ours: [[Double]], oursBase: [[Double]]
    let ourTop1: [Int], ourBaseTop1: [Int]
    let theirsBase: LlamaCppAnswer

    static func largestGap(_ a: [[Double]], _ b: [[Double]]) -> Double {
        zip(a, b).map { x, y in zip(x, y).map { abs($0 - $1) }.max() ?? 0 }.max() ?? 0
    }

    /// llama.cpp's own noise on this quantized model (it quantizes activations for the Q4_1 matmuls): its base
    /// logits against adapt's.
    var noise: Double { Self.largestGap(oursBase, theirsBase.logits.map { Array($0.suffix(10)) }) }

    func checkBase(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(theirsBase.top1 == ourBaseTop1, "base model: llama.cpp \(theirsBase.top1), adapt \(ourBaseTop1)", sourceLocation: sourceLocation)
        #expect(ourTop1 != ourBaseTop1, "the adapter changes no next token", sourceLocation: sourceLocation)
    }

    func check(_ theirs: LlamaCppAnswer, outtype: GGUFLoRA.Precision, size: Int, peer: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let noise = self.noise
        let adaptedGap = Self.largestGap(ours, theirs.logits.map { Array($0.prefix(10)) })
        // How far the adapter moves llama.cpp's logits: the effect that must stand far above the noise.
        let effect = Self.largestGap(theirs.logits, theirsBase.logits)
        print("\(peer) consumer (\(outtype.rawValue), \(size) bytes): base noise \(noise), adapted gap \(adaptedGap), adapter effect \(effect), "
              + "top-1 changed on \(zip(ourTop1, ourBaseTop1).filter { $0 != $1 }.count) of \(ourTop1.count) prompts")
        #expect(theirs.top1 == ourTop1, "\(outtype): llama.cpp \(theirs.top1), adapt \(ourTop1)", sourceLocation: sourceLocation)
        // The adapter makes the activations the quantized matmuls see larger, and with them the noise: within
        // three times the base model's.
        #expect(adaptedGap <= 3 * noise, "\(outtype): adapted gap \(adaptedGap), base noise \(noise)", sourceLocation: sourceLocation)
        #expect(effect > 10 * max(noise, adaptedGap), "\(outtype): adapter effect \(effect), noise \(noise)", sourceLocation: sourceLocation)
    }
}

// The PEFT and mlx exports checked with llama.cpp's own Python package (gguf-py reads the GGUF-LoRA export) and
// the converter's q/k permutation: PEFT's B permuted as convert_hf_to_gguf.py permutes llama weights is the
// GGUF's B, which llama.cpp applies as adapt does (the test above). gguf-py and numpy are wheels (`scripts/peers
// gguf`, seconds), so this test stays in the default run.
@Test func peftAndMLXExportsAreTheGGUFExportInHuggingFaceOrder() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 6, name: "tiny.gguf")
    let base = try BaseModelShape(model: model)
    try cli.register(randomAdapter(base: base, rank: 4, alpha: 6, targets: ["q", "k", "v", "o", "gate", "up", "down"], seed: 3),
                     lineage: "mail", name: "a.bin")
    for (format, out) in [("gguf-lora", "a.gguf"), ("peft", "peft"), ("mlx", "mlx")] {
        #expect(try cli.run(["registry", "export", "mail", "--version", "1", "--format", format, "--out", cli.path(out), "--model", model.path]).status == 0)
    }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/check_exports_with_gguf_py.py")
    let result = try Executables.run(executableAt: try peerPython("gguf"),
                                     [script.path, cli.path("a.gguf"), cli.path("peft"), cli.path("mlx"), "\(base.headCount)", "\(base.kvHeadCount)"])
    #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
    let summary = try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8))
    #expect(summary["ok"] == .bool(true) && summary["pairs"] == .int(base.blockCount * 7) && summary["permuted"] == .int(base.blockCount * 2))
}
