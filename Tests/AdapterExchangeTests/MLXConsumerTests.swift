import AdaptCore
import Adapters
import Foundation
import Testing
import TestSupport

// The mlx export as mlx-lm applies it: `mlx_lm.load(model_dir, adapter_path:)` on mlx's Linux CPU backend in
// float32, on the Hugging Face directory transformers makes from the same GGUF. mlx is too heavy for every run, so
// its logits come from a fixture that scripts/fixtures/mlx_reference.py makes with the real packages; this test
// makes the same seeded adapter, requires its mlx export to be the bits the fixture was made from, and compares
// adapt's logits. The fixture has the PEFT fixture's layout, so it decodes into the same type.

/// The bound of the PEFT check: mlx computes in float32 from the same dequantized weights; the figures measured are
/// in docs/adapter-exchange.md.
let mlxTolerance = 1e-3

@Test(.enabled(if: CheckoutModel.isPresent, "scripts/fetch-model puts the model in state/models"))
func mlxLMAppliesTheExportedAdapterAsAdaptDoes() throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/mlx_reference.json")
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    let reference = try decoder.decode(PEFTReference.self, from: Data(contentsOf: url))
    #expect(reference.model == CheckoutModel.url.lastPathComponent)
    let cli = ExchangeCLI()
    let base = try BaseModelShape(model: CheckoutModel.url)
    let adapter = randomAdapter(base: base, rank: reference.adapter.rank, alpha: reference.adapter.alpha, seed: reference.adapter.seed,
                                bScale: reference.adapter.bScale)
    let adapterFile = cli.dir.file("adapter.bin")
    try adapter.write(to: adapterFile)
    #expect(try cli.run(["registry", "add", adapterFile.path, "--lineage", "mail"]).status == 0)

    // The fixture describes today's export: the same weights and the same bytes.
    let mlx = cli.dir.file("mlx")
    let exported = try cli.json(["registry", "export", "mail", "--version", "1", "--format", "mlx", "--out", mlx.path,
                                 "--model", CheckoutModel.url.path])
    #expect(exported["digest"]?.stringValue == reference.adapter.weightsDigest,
            "the fixture was made from another adapter or another export: run scripts/fixtures/mlx_reference.py")
    #expect(reference.adapter.files.count == 2)
    for (name, digest) in reference.adapter.files {
        #expect(try Digest.sha256(fileAt: mlx.appendingPathComponent(name)).hex == digest, "\(name) differs from the one mlx-lm loaded")
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
    print("mlx-lm consumer: base gap \(baseGap), adapted gap \(adaptedGap), adapter effect \(ourEffect) (mlx-lm \(theirEffect)), "
          + "top-1 changed on \(changed) of \(reference.prompts.count) prompts")
    #expect(reference.prompts.count >= 6)
    #expect(baseGap <= mlxTolerance, "base model: adapt against mlx-lm \(baseGap)")
    #expect(adaptedGap <= mlxTolerance, "with the adapter: adapt against mlx-lm \(adaptedGap)")
    // The adapter really acts in both (mlx-lm ignores adapter keys it does not know): its effect stands far above the bound.
    #expect(ourEffect > 1000 * mlxTolerance && theirEffect > 1000 * mlxTolerance, "adapter effect \(ourEffect), mlx-lm \(theirEffect)")
    #expect(changed > 0, "the adapter changes no next token")
}
