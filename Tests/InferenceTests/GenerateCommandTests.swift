import AdaptCore
import Adapters
import Foundation
import Model
import Registry
import Storage
import Testing
import TestSupport
import Training
@testable import Inference

/// Files the command-line tests share: the tiny model and adapter files made for it.
enum GenerateFixtures {
    static let directory = TemporaryDirectory("generate-cli")

    /// An adapter file for the tiny model with random non-zero weights.
    static func adapterFile(seed: UInt64, baseModel: Digest = TinyLlama.digest, convention: String = "chatml") throws -> URL {
        let lora = TinyLlama.adapter(seed: seed)
        let metadata = AdapterFileMetadata(
            baseModelDigest: baseModel, chatConvention: convention, templateDigest: nil,
            targets: lora.config.targets.map(\.rawValue), rank: lora.config.rank, alpha: lora.config.alpha, steps: 1,
            trainingExamples: 1, heldOutExamples: 0, truncatedExamples: 0, trainingTokens: 1, metrics: [:],
            trainingConfiguration: .object([:]), trainingConfigurationDigest: Digest.sha256("config"))
        let url = directory.file("adapter-\(seed)-\(baseModel.short)-\(convention).lora")
        _ = try AdapterFile(metadata: metadata, tensors: NamedTensors(names: lora.names, shapes: lora.shapes, values: lora.values))
            .write(to: url)
        return url
    }

    static func run(_ arguments: [String], state: TemporaryDirectory? = nil) throws -> ProcessResult {
        let stateArguments = state.map { ["--state", $0.state.root.path] } ?? []
        return try Executables.run("adapt", stateArguments + ["generate", "--model", TinyLlama.url.path] + arguments)
    }

    static func json(_ result: ProcessResult) throws -> [String: JSONValue] {
        try JSON.decode([String: JSONValue].self, from: result.stdout, context: "adapt generate --json")
    }
}

private let fields: Set<String> = ["text", "token_ids", "prompt_tokens", "cached_tokens", "generated_tokens", "prompt_ms",
                                   "generation_ms", "tokens_per_second", "base_weights"]

@Test func generateJSONHasExactlyTheDesignedFields() throws {
    let result = try GenerateFixtures.run(["--prompt", "hello world", "--greedy", "--max-tokens", "6", "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try GenerateFixtures.json(result)
    #expect(Set(json.keys) == fields)
    #expect(json["generated_tokens"]?.intValue == json["token_ids"]?.arrayValue?.count)
    #expect((json["prompt_tokens"]?.intValue ?? 0) > 0)
    #expect(json["base_weights"]?.stringValue == "quantized")
}

/// The base stays in the file's types unless asked: both storages answer, with the same greedy tokens on the
/// tiny model, and say which they were.
@Test func generateKeepsTheBaseQuantizedUnlessAskedForF32() throws {
    let arguments = ["--prompt", "hello world", "--greedy", "--max-tokens", "8", "--json"]
    let quantized = try GenerateFixtures.json(try GenerateFixtures.run(arguments))
    let f32 = try GenerateFixtures.json(try GenerateFixtures.run(arguments + ["--base-weights", "f32"]))
    #expect(quantized["base_weights"]?.stringValue == "quantized" && f32["base_weights"]?.stringValue == "f32")
    #expect(quantized["token_ids"] == f32["token_ids"])
    let refused = try GenerateFixtures.run(arguments + ["--base-weights", "f16"])
    #expect(refused.status == 2 && refused.stderr.contains("must be quantized or f32"), "\(refused.stderr)")
}

@Test func generateStreamsTheSameTextItReportsAndTheSameSeedRepeatsIt() throws {
    let arguments = ["--prompt", "the world", "--seed", "9", "--temperature", "1.2", "--max-tokens", "12"]
    let json = try GenerateFixtures.json(try GenerateFixtures.run(arguments + ["--json"]))
    let again = try GenerateFixtures.json(try GenerateFixtures.run(arguments + ["--json"]))
    let streamed = try GenerateFixtures.run(arguments)
    #expect(json["token_ids"] == again["token_ids"])
    #expect(streamed.status == 0)
    #expect(streamed.stdout == (json["text"]?.stringValue ?? "?") + "\n")
    #expect(streamed.stderr.contains("tokens/s"))
}

@Test func generateCompareGivesTheBaseTheAdaptersLengthAsItsLimit() throws {
    let adapter = try GenerateFixtures.adapterFile(seed: 1)
    let result = try GenerateFixtures.run(["--prompt", "hello", "--greedy", "--max-tokens", "10", "--adapter", adapter.path,
                                           "--compare", "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try GenerateFixtures.json(result)
    #expect(Set(json.keys) == ["base", "adapter"])
    let base = json["base"]?.objectValue ?? [:], adapted = json["adapter"]?.objectValue ?? [:]
    #expect(Set(base.keys) == fields && Set(adapted.keys) == fields)
    #expect((base["generated_tokens"]?.intValue ?? 99) <= max(1, adapted["generated_tokens"]?.intValue ?? 0))
    #expect(base["token_ids"] != adapted["token_ids"])

    let table = try GenerateFixtures.run(["--prompt", "hello", "--greedy", "--max-tokens", "10", "--adapter", adapter.path, "--compare"])
    #expect(table.stdout.contains("base model") && table.stdout.contains("│"))
}

@Test func generateRefusesAnAdapterForAnotherBaseModel() throws {
    let adapter = try GenerateFixtures.adapterFile(seed: 1, baseModel: Digest.sha256("another model"))
    let result = try GenerateFixtures.run(["--prompt", "hello", "--adapter", adapter.path, "--max-tokens", "2"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("was trained on base model"))
    #expect(result.stdout.isEmpty)
}

@Test func generateWithALineageWithoutActiveVersionSaysItUsesTheBaseModel() throws {
    let state = TemporaryDirectory("generate-lineage")
    let result = try GenerateFixtures.run(["--lineage", "mail", "--prompt", "hello", "--greedy", "--max-tokens", "3", "--json"],
                                          state: state)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("no active adapter version"))
    let base = try GenerateFixtures.json(try GenerateFixtures.run(["--prompt", "hello", "--greedy", "--max-tokens", "3", "--json"]))
    #expect(try GenerateFixtures.json(result)["token_ids"] == base["token_ids"])
}

@Test func generateUsageErrorsExitWithTwo() throws {
    #expect(try GenerateFixtures.run([]).status == 2)
    #expect(try GenerateFixtures.run(["--prompt", "x", "--top-p", "0"]).status == 2)
    #expect(try GenerateFixtures.run(["--prompt", "x", "--seed", "-1"]).status == 2)
    let compare = try GenerateFixtures.run(["--prompt", "x", "--compare"])
    #expect(compare.status == 1 && compare.stderr.contains("--compare needs an adapter"))
}

@Test func sessionFollowingALineageReloadsTheNewlyPromotedVersion() async throws {
    let directory = TemporaryDirectory("inference-registry")
    let state = directory.state
    try state.create()
    let registry = try AdapterRegistry(database: try Database(path: state.database.path), blobs: state.blobs)
    let lineage = ShortIdentifier("mail")!
    let session = TinyLlama.session(catalog: RegistryAdapterCatalog(registry: registry))
    let prompt = Prompt.tokens([1, 40, 300, 7, 99])
    let greedy = GenerationOptions(sampling: .greedy, maxTokens: 12)

    #expect(try await session.attach(lineage: "mail").isBase)
    let base = try await session.generate(prompt, options: greedy)

    let one = try Data(contentsOf: try GenerateFixtures.adapterFile(seed: 1))
    try registry.register(adapterData: one, lineage: lineage, metadata: Registry.AdapterMetadata())
    try registry.promote(VersionReference(lineage: lineage, number: 1), reason: .force)
    guard case let .adapter(_, _, _, version) = try await session.reload() else { Issue.record("v1 not attached"); return }
    #expect(version == 1)
    let v1 = try await session.generate(prompt, options: greedy)
    #expect(v1.tokenIDs != base.tokenIDs)

    let two = try Data(contentsOf: try GenerateFixtures.adapterFile(seed: 2))
    try registry.register(adapterData: two, lineage: lineage, metadata: Registry.AdapterMetadata())
    try registry.promote(VersionReference(lineage: lineage, number: 2), reason: .force)
    try await session.reload()
    let v2 = try await session.generate(prompt, options: greedy)
    #expect(v2.tokenIDs != v1.tokenIDs)

    try registry.rollback(lineage: lineage)
    try await session.reload()
    #expect(try await session.generate(prompt, options: greedy).tokenIDs == v1.tokenIDs)

    let wrong = try Data(contentsOf: try GenerateFixtures.adapterFile(seed: 3, convention: "llama3"))
    try registry.register(adapterData: wrong, lineage: lineage, metadata: Registry.AdapterMetadata())
    try registry.promote(VersionReference(lineage: lineage, number: 3), reason: .force)
    await #expect(throws: InferenceError.self) { try await session.reload() }
    // The refused version did not replace the one in use.
    #expect(try await session.generate(prompt, options: greedy).tokenIDs == v1.tokenIDs)
}

@Test func flippedByteInAnAdapterIsDetectedOnTheHotSwapPath() throws {
    let url = try GenerateFixtures.adapterFile(seed: 4)
    let good = try AdapterFile.readBytes(from: url)
    #expect(try AdapterBundle.load(url).digest == Digest.sha256(good))
    // One flipped bit anywhere (magic aside): in the header, in a tensor, in the trailer.
    for position in [20, good.count / 2, good.count - 40, good.count - 1] {
        var flipped = good
        flipped[position] ^= 0x10
        let copy = GenerateFixtures.directory.file("flipped-\(position).lora")
        try flipped.write(to: copy)
        #expect(throws: AdapterFileError.self) { try AdapterBundle.load(copy) }
        #expect(throws: AdapterFileError.self) { try AdapterFile.verify(flipped, name: "f") }
    }
}

@Test func registryBlobWithAFlippedByteIsRefusedAfterOneHash() async throws {
    let directory = TemporaryDirectory("inference-registry-corrupt")
    let state = directory.state
    try state.create()
    let registry = try AdapterRegistry(database: try Database(path: state.database.path), blobs: state.blobs)
    let lineage = ShortIdentifier("mail")!
    let bytes = try Data(contentsOf: try GenerateFixtures.adapterFile(seed: 5))
    let version = try registry.register(adapterData: bytes, lineage: lineage, metadata: Registry.AdapterMetadata())
    try registry.promote(VersionReference(lineage: lineage, number: 1), reason: .force)
    let catalog = RegistryAdapterCatalog(registry: registry)
    #expect(try catalog.activeAdapter(lineage: "mail")?.digest == version.adapterDigest)

    // Flip a byte of a tensor in the stored blob and rewrite its trailer so the file's own check passes:
    // only the digest the registry names the blob by can catch it, in the same single pass.
    var flipped = bytes
    flipped[bytes.count / 2] ^= 0x01
    let body = flipped.prefix(flipped.count - 32)
    flipped.replaceSubrange((flipped.count - 32)..., with: Digest.sha256(Data(body)).bytes)
    #expect(throws: Never.self) { try AdapterFile.verify(flipped, name: "self-consistent") }
    try flipped.write(to: state.blobs.url(for: version.adapterDigest))
    #expect(throws: RegistryError.self) { try catalog.activeAdapter(lineage: "mail") }
    // A plain flip (trailer left alone) is refused as well.
    var plain = bytes
    plain[bytes.count / 3] ^= 0x01
    try plain.write(to: state.blobs.url(for: version.adapterDigest))
    #expect(throws: RegistryError.self) { try catalog.activeAdapter(lineage: "mail") }
}

/// The help names the same bound the check refuses past: this OpenBLAS's most threads.
@Test func theThreadsHelpNamesTheBoundTheCheckApplies() throws {
    let help = try Executables.run("adapt", ["generate", "--help"])
    let line = try #require(help.stdout.split(separator: "\n").first { $0.contains("--threads") })
    let bound = try #require(line.split(separator: " ").firstIndex(of: "to").map { Int(line.split(separator: " ")[$0 + 1]) } ?? nil, "\(line)")
    let refused = try Executables.run("adapt", ["generate", "--threads", "\(bound + 1)", "--prompt", "x"])
    #expect(refused.status == 2)
    #expect(refused.stderr.contains("between 1 and \(bound)"), "\(refused.stderr)")
    let train = try Executables.run("adapt", ["train", "--help"])
    #expect(train.stdout.contains("1 to \(bound)"), "\(train.stdout)")
}
