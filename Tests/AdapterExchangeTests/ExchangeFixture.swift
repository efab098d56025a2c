import AdaptCore
import AdapterExchange
import Adapters
import Foundation
import Model
import Testing
import TestSupport

/// A state directory with base models in it and the `adapt` executable to run against it.
struct ExchangeCLI {
    let dir = TemporaryDirectory("exchange")

    init() { try? dir.state.create() }

    @discardableResult
    func run(_ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", dir.state.root.path] + arguments)
    }

    func json(_ arguments: [String]) throws -> JSONValue {
        let result = try run(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try JSONDecoder().decode(JSONValue.self, from: Data(result.stdout.utf8))
    }

    /// A tiny random-weight llama (2 blocks, width 64) written into models/.
    func tinyModel(seed: UInt64, name: String) throws -> URL {
        try FileManager.default.createDirectory(at: dir.state.models, withIntermediateDirectories: true)
        let url = dir.state.models.appendingPathComponent(name)
        try TinyModel(seed: seed).write(to: url)
        return url
    }

    func path(_ name: String) -> String { dir.file(name).path }

    /// Registers `adapter` as the next version of `lineage` through `adapt registry add`.
    func register(_ adapter: AdapterFile, lineage: String, name: String, extra: [String] = []) throws {
        let url = dir.file(name)
        try adapter.write(to: url)
        let result = try run(["registry", "add", url.path, "--lineage", lineage] + extra)
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// The number of versions the registry holds (what a refused import must leave alone).
    func versionCount() throws -> Int {
        try json(["registry", "list"]).arrayValue?.count ?? -1
    }
}

/// Random LoRA weights of a given size for `base`, in an adapt adapter file: A in ±1/√in as training starts,
/// B in ±`bScale` so the adapter changes the model's output.
func randomAdapter(base: BaseModelShape, rank: Int, alpha: Float = 16, targets: [String] = ["q", "k", "v", "o"],
                   seed: UInt64, bScale: Float = 0.05) -> AdapterFile {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    func uniform() -> Float {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return Float(state >> 40) / Float(1 << 24) * 2 - 1
    }
    var names: [String] = [], shapes: [[Int]] = [], values: [[Float]] = []
    for block in 0..<base.blockCount {
        for target in targets {
            let (output, input) = base.projections[target]!
            names.append("blk.\(block).\(target).lora_a"); shapes.append([rank, input])
            values.append((0..<(rank * input)).map { _ in uniform() / Float(input).squareRoot() })
            names.append("blk.\(block).\(target).lora_b"); shapes.append([output, rank])
            values.append((0..<(output * rank)).map { _ in uniform() * bScale })
        }
    }
    let configuration: JSONValue = .object(["seed": .int(Int(seed))])
    let metadata = AdapterFileMetadata(
        baseModelDigest: base.digest, chatConvention: "chatml", templateDigest: nil, targets: targets, rank: rank, alpha: alpha,
        steps: 1, trainingExamples: 1, heldOutExamples: 0, truncatedExamples: 0, trainingTokens: 1, metrics: [:],
        trainingConfiguration: configuration, trainingConfigurationDigest: JSON.digest(configuration))
    return AdapterFile(metadata: metadata, tensors: NamedTensors(names: names, shapes: shapes, values: values))
}
