import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Testing
import TestSupport

// The GGUF-LoRA export as llama.cpp applies it, in the default run: llama-cpp-python compiles llama.cpp (10-20
// minutes on 2 cores), so llama.cpp's next tokens and logits come from a fixture that
// scripts/fixtures/llama_cpp_reference.py makes with the real package (the live test, LlamaCppConsumerTests.swift,
// runs in `scripts/test --peers`). This test makes the same seeded adapter, requires each export to be the bits the
// fixture was made from, and applies the live test's criteria to adapt's logits and the recorded ones.

struct LlamaCppReference: Decodable {
    struct Adapter: Decodable {
        let rank: Int
        let alpha: Float
        let seed: UInt64
        let bScale: Float
    }
    struct Prompt: Decodable {
        let prompt: String
        let ids: [Int]
        /// adapt's 10 largest logits with the adapter, then its 10 largest without, when the fixture was made.
        let compared: [Int]
    }
    struct Export: Decodable {
        let weightsDigest: String
        let sha256: String
        let size: Int
        let top1: [Int]
        let logits: [[Double]]
    }
    let model: String
    let adapter: Adapter
    let prompts: [Prompt]
    let base: LlamaCppAnswer
    let exports: [String: Export]

    static let script = "scripts/fixtures/llama_cpp_reference.py"

    static func load() throws -> LlamaCppReference {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/llama_cpp_reference.json")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(LlamaCppReference.self, from: Data(contentsOf: url))
    }
}

@Test(.enabled(if: CheckoutModel.isPresent, "scripts/fetch-model puts the model in state/models"))
func theGGUFExportMatchesLlamaCppsRecordedNextTokensAndLogits() throws {
    let reference = try LlamaCppReference.load()
    #expect(reference.model == CheckoutModel.url.lastPathComponent)
    let cli = ExchangeCLI()
    let base = try BaseModelShape(model: CheckoutModel.url)
    let adapter = randomAdapter(base: base, rank: reference.adapter.rank, alpha: reference.adapter.alpha,
                                seed: reference.adapter.seed, bScale: reference.adapter.bScale)
    let adapterFile = cli.dir.file("adapter.bin")
    try adapter.write(to: adapterFile)
    #expect(try cli.run(["registry", "add", adapterFile.path, "--lineage", "mail"]).status == 0)

    // The fixture describes today's export at every outtype: the same weights and the same bytes.
    #expect(Set(reference.exports.keys) == Set(GGUFLoRA.Precision.allCases.map(\.rawValue)))
    var answers: [(GGUFLoRA.Precision, LlamaCppReference.Export)] = []
    for outtype in GGUFLoRA.Precision.allCases {
        let recorded = try #require(reference.exports[outtype.rawValue])
        let gguf = cli.dir.file("mail-\(outtype.rawValue).gguf")
        let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", "gguf-lora", "--outtype", outtype.rawValue,
                                     "--out", gguf.path, "--model", CheckoutModel.url.path])
        #expect(exported["digest"]?.stringValue == recorded.weightsDigest,
                "\(outtype): the fixture was made from another adapter or another export: run \(LlamaCppReference.script)")
        #expect(try Digest.sha256(fileAt: gguf).hex == recorded.sha256,
                "\(outtype): the export differs from the file llama.cpp loaded: run \(LlamaCppReference.script)")
        answers.append((outtype, recorded))
    }

    // adapt's logits at the recorded ids (its whole vocabulary, so the comparison holds if its own top 10 moved).
    var ours: [[Double]] = [], oursBase: [[Double]] = [], ourTop1: [Int] = [], ourBaseTop1: [Int] = []
    for entry in reference.prompts {
        let adapted = try adaptAllLogits(cli, prompt: entry.prompt, adapter: adapterFile)
        let plain = try adaptAllLogits(cli, prompt: entry.prompt, adapter: nil)
        #expect(adapted.ids == entry.ids && plain.ids == entry.ids, "\(entry.prompt): adapt's tokens are not the fixture's")
        try #require(entry.compared.count == 20)
        ours.append(try entry.compared.prefix(10).map { try #require(adapted.logits[$0]) })
        oursBase.append(try entry.compared.suffix(10).map { try #require(plain.logits[$0]) })
        ourTop1.append(adapted.top1)
        ourBaseTop1.append(plain.top1)
    }
    #expect(reference.prompts.count >= 6)
    let comparison = LlamaCppComparison(ours: ours, oursBase: oursBase, ourTop1: ourTop1, ourBaseTop1: ourBaseTop1, theirsBase: reference.base)
    comparison.checkBase()
    for (outtype, recorded) in answers {
        comparison.check(LlamaCppAnswer(top1: recorded.top1, logits: recorded.logits), outtype: outtype, size: recorded.size,
                         peer: "llama.cpp (fixture)")
    }
}
