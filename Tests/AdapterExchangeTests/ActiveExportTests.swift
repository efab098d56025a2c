import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Testing
import TestSupport

// Promotion and rollback leave the active adapter where llama-server and Ollama can find it.

@Test func promotionAndRollbackRewriteTheActiveExport() throws {
    let cli = ExchangeCLI()
    let model = try cli.tinyModel(seed: 4, name: DefaultModel.fileName)
    let base = try BaseModelShape(model: model)
    let first = randomAdapter(base: base, rank: 4, seed: 1), second = randomAdapter(base: base, rank: 4, seed: 2)
    try cli.register(first, lineage: "mail", name: "1.bin")
    try cli.register(second, lineage: "mail", name: "2.bin")
    let exports = cli.dir.state.root.appendingPathComponent("exports/mail")
    let gguf = exports.appendingPathComponent("active.gguf"), modelfile = exports.appendingPathComponent("Modelfile")
    func activeDigest() throws -> String {
        try GGUFLoRA.adapter(at: gguf, base: base, expectedRank: nil).weightsDigest.hex
    }

    let promoted = try cli.run(["registry", "promote", "mail/v1", "--force"])
    #expect(promoted.status == 0, "\(promoted.stderr)")
    #expect(promoted.stderr.contains("llama-server -m \(model.path) --lora \(gguf.path)"), "\(promoted.stderr)")
    #expect(promoted.stderr.contains("ollama create mail -f \(modelfile.path)"))
    #expect(try activeDigest() == PortableAdapter(file: first).weightsDigest.hex)
    #expect(try String(contentsOf: modelfile, encoding: .utf8) == "FROM \(model.path)\nADAPTER ./active.gguf\n")

    #expect(try cli.run(["registry", "promote", "mail/v2", "--force"]).status == 0)
    #expect(try activeDigest() == PortableAdapter(file: second).weightsDigest.hex)
    #expect(try cli.run(["registry", "rollback", "--lineage", "mail"]).status == 0)
    #expect(try activeDigest() == PortableAdapter(file: first).weightsDigest.hex)

    let toBase = try cli.run(["registry", "rollback", "--lineage", "mail"])
    #expect(toBase.status == 0)
    #expect(toBase.stderr.contains("serve the base model"), "\(toBase.stderr)")
    #expect(!FileManager.default.fileExists(atPath: gguf.path) && !FileManager.default.fileExists(atPath: modelfile.path))
}

@Test func theActiveExportNamesTheLineagesOwnBaseModel() throws {
    let cli = ExchangeCLI()
    _ = try cli.tinyModel(seed: 4, name: DefaultModel.fileName)
    let other = try cli.tinyModel(seed: 5, name: "other.gguf")
    let base = try BaseModelShape(model: other)
    try cli.register(randomAdapter(base: base, rank: 4, seed: 3), lineage: "notes", name: "n.bin")
    let promoted = try cli.run(["registry", "promote", "notes/v1", "--force"])
    #expect(promoted.status == 0 && promoted.stderr.contains("llama-server -m \(other.path) --lora"), "\(promoted.stderr)")
    let modelfile = cli.dir.state.root.appendingPathComponent("exports/notes/Modelfile")
    #expect(try String(contentsOf: modelfile, encoding: .utf8).hasPrefix("FROM \(other.path)\n"))
}
