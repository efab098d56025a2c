import AdaptCore
import Adapters
import Foundation
import Testing
import TestSupport

// Exports as their consumers apply them. The PEFT export as Hugging Face applies it: transformers loads the model from the same GGUF in float32 and
// `PeftModel.from_pretrained` applies adapt's export. PyTorch is too heavy for every run, so its logits come from
// a fixture that scripts/fixtures/peft_reference.py makes with the real packages; this test makes the same
// seeded adapter, requires its export to be the bits the fixture was made from, and compares adapt's logits.

struct PEFTReference: Decodable {
    struct Adapter: Decodable {
        let rank: Int
        let alpha: Float
        let seed: UInt64
        let bScale: Float
        let weightsDigest: String
        let files: [String: String]
    }
    struct Prompt: Decodable {
        let prompt: String
        let ids: [Int]
        let compared: [Int]
        let adapted: [Double]
        let base: [Double]
        let adaptedTop1: Int
        let baseTop1: Int
    }
    let model: String
    let adapter: Adapter
    let prompts: [Prompt]

    static func load(_ fixture: String) throws -> PEFTReference {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(fixture)")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(PEFTReference.self, from: Data(contentsOf: url))
    }
}

/// adapt's next-token logits over the whole vocabulary: `adapt logits --top` larger than the vocabulary. Decoded
/// into a typed value, not a JSONValue: the document holds one entry per vocabulary token.
func adaptAllLogits(_ cli: ExchangeCLI, prompt: String, adapter: URL?) throws -> (ids: [Int], logits: [Int: Double], top1: Int) {
    struct Answer: Decodable {
        struct Entry: Decodable { let id: Int; let logit: Double }
        let ids: [Int]
        let top: [Entry]
    }
    let result = try cli.run(["logits", "--prompt", prompt, "--top", "1000000", "--model", CheckoutModel.url.path, "--json"]
                             + (adapter.map { ["--adapter", $0.path] } ?? []))
    #expect(result.status == 0, "\(result.stderr)")
    let answer = try JSONDecoder().decode(Answer.self, from: Data(result.stdout.utf8))
    var logits: [Int: Double] = [:]
    for entry in answer.top { logits[entry.id] = entry.logit }
    return (answer.ids, logits, try #require(answer.top.first?.id))
}

/// A tool that applies an exported adapter, with the fixture its script made (scripts/fixtures/<tool>_reference.py).
/// mlx-lm's fixture has the PEFT fixture's layout: mlx computes in float32 from the same dequantized weights.
struct ExportConsumer: Sendable, CustomTestStringConvertible {
    let tool: String, format: String, fixture: String, script: String
    var testDescription: String { tool }
    static let peft = ExportConsumer(tool: "PEFT", format: "peft", fixture: "peft_reference.json", script: "peft_reference.py")
    static let mlx = ExportConsumer(tool: "mlx-lm", format: "mlx", fixture: "mlx_reference.json", script: "mlx_reference.py")
}

/// The bound in float32; the figures measured are in docs/adapter-exchange.md.
let consumerTolerance = 1e-3

@Test(.enabled(if: CheckoutModel.isPresent, "scripts/fetch-model puts the model in state/models"),
      arguments: [ExportConsumer.peft, .mlx])
func theConsumerAppliesTheExportedAdapterAsAdaptDoes(_ consumer: ExportConsumer) throws {
    let reference = try PEFTReference.load(consumer.fixture)
    #expect(reference.model == CheckoutModel.url.lastPathComponent)
    let cli = ExchangeCLI()
    let base = try BaseModelShape(model: CheckoutModel.url)
    let adapter = randomAdapter(base: base, rank: reference.adapter.rank, alpha: reference.adapter.alpha, seed: reference.adapter.seed,
                                bScale: reference.adapter.bScale)
    let adapterFile = cli.dir.file("adapter.bin")
    try adapter.write(to: adapterFile)
    #expect(try cli.run(["registry", "add", adapterFile.path, "--lineage", "mail"]).status == 0)

    // The fixture describes today's export: the same weights and the same bytes.
    let exportDirectory = cli.dir.file(consumer.format)
    let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", consumer.format, "--out", exportDirectory.path,
                                 "--model", CheckoutModel.url.path])
    #expect(exported["digest"]?.stringValue == reference.adapter.weightsDigest,
            "the fixture was made from another adapter or another export: run scripts/fixtures/\(consumer.script)")
    #expect(reference.adapter.files.count == 2)
    for (name, digest) in reference.adapter.files {
        #expect(try Digest.sha256(fileAt: exportDirectory.appendingPathComponent(name)).hex == digest, "\(name) differs from the one \(consumer.tool) loaded")
    }

    var adaptedGap = 0.0, baseGap = 0.0, ourEffect = 0.0, theirEffect = 0.0, changed = 0
    for entry in reference.prompts {
        let adapted = try adaptAllLogits(cli, prompt: entry.prompt, adapter: adapterFile)
        let plain = try adaptAllLogits(cli, prompt: entry.prompt, adapter: nil)
        #expect(adapted.ids == entry.ids && plain.ids == entry.ids, "\(entry.prompt): adapt's tokens are not the fixture's")
        #expect(adapted.top1 == entry.adaptedTop1 && plain.top1 == entry.baseTop1, "\(entry.prompt): next token")
        if entry.adaptedTop1 != entry.baseTop1 { changed += 1 }
        for (i, id) in entry.compared.enumerated() {
            let ours = try #require(adapted.logits[id]), oursBase = try #require(plain.logits[id])
            adaptedGap = max(adaptedGap, abs(ours - entry.adapted[i]))
            baseGap = max(baseGap, abs(oursBase - entry.base[i]))
            ourEffect = max(ourEffect, abs(ours - oursBase))
            theirEffect = max(theirEffect, abs(entry.adapted[i] - entry.base[i]))
        }
    }
    print("\(consumer.tool) consumer: base gap \(baseGap), adapted gap \(adaptedGap), adapter effect \(ourEffect) (\(consumer.tool) \(theirEffect)), "
          + "top-1 changed on \(changed) of \(reference.prompts.count) prompts")
    #expect(reference.prompts.count >= 6)
    #expect(baseGap <= consumerTolerance, "base model: adapt against \(consumer.tool) \(baseGap)")
    #expect(adaptedGap <= consumerTolerance, "with the adapter: adapt against \(consumer.tool) \(adaptedGap)")
    // The adapter really acts in both (mlx-lm ignores adapter keys it does not know): its effect stands far above the bound.
    #expect(ourEffect > 1000 * consumerTolerance && theirEffect > 1000 * consumerTolerance, "adapter effect \(ourEffect), \(consumer.tool) \(theirEffect)")
    #expect(changed > 0, "the adapter changes no next token")
}
