import AdaptCore
import Foundation

/// One step of a planned run, as the job engine will be asked to create it.
public struct PlannedStep: Sendable, Equatable, Codable {
    public let name: String
    /// The step kind, which names the worker that claims it (`prune`, `sample`, `train`, `eval`, `promote`).
    public let kind: String
    /// Exactly the parameters this step needs, plus `lineage`, `night` and `seed`.
    public let input: JSONValue
    public let dependsOn: [String]
    public let maxAttempts: Int
    public let leaseSeconds: Int
    public let priority: Int
    /// nil: no timeout (a step planned from a pipeline without `timeout_seconds`); encoded only when set.
    public let timeoutSeconds: Int?

    enum CodingKeys: String, CodingKey {
        case name, kind, input, priority
        case dependsOn = "depends_on", maxAttempts = "max_attempts", leaseSeconds = "lease_seconds"
        case timeoutSeconds = "timeout_seconds"
    }
}

/// A pipeline expanded for one lineage and one night: a plain value the caller turns into a run of the job
/// engine. Planning is a pure function, so the same inputs give the same manifest digest.
public struct PlannedRun: Sendable, Equatable, Codable {
    /// The pipeline's name (`nightly`).
    public let name: String
    /// `<lineage>/<night>`: enqueue is idempotent on it (DESIGN.md, "Storage and jobs").
    public let uniqueKey: String
    /// What replay needs to redo the run: the resolved pipeline and its digest, lineage, night, seed, threads.
    public let manifest: JSONValue
    /// In dependency order (each step after everything it depends on; ties in file order).
    public let steps: [PlannedStep]

    enum CodingKeys: String, CodingKey {
        case name, manifest, steps
        case uniqueKey = "unique_key"
    }

    /// The held-out rule new runs record in their manifest (`held_out_rule`): the number of ReplayBuffer's
    /// `HeldOutSplit.Rule.fillFirst`, whose sample step tops the held-out set up to the gate's `min_pairs`.
    /// A manifest without the field was planned before it and replays under the rule of that time (1).
    public static let heldOutRule = 2

    /// The digest of the manifest's canonical JSON.
    public var manifestDigest: Digest { JSON.digest(manifest) }

    /// The unique key of a lineage's run for a night.
    public static func uniqueKey(lineage: String, night: Night) -> String { "\(lineage)/\(night)" }

    /// The seed a run uses when neither the caller nor the pipeline fixes one: a pure function of lineage and
    /// night (48 bits of a SHA-256), so every night draws different samples yet replays identically.
    public static func derivedSeed(lineage: String, night: Night) -> UInt64 {
        let digest = Digest.sha256("adapt.nightly-seed\u{0}\(lineage)\u{0}\(night)")
        return UInt64(digest.hex.prefix(12), radix: 16) ?? 0
    }
}

/// Expands `pipeline` for `lineage` on `night`.
///
/// The seed is `seed` when given, else the pipeline's fixed seed, else `PlannedRun.derivedSeed`.
/// Throws `PipelineError.invalidLineage` or `.seedOutOfRange`.
public func plan(pipeline: Pipeline, lineage: String, night: Night, seed: UInt64? = nil) throws -> PlannedRun {
    try PipelineError.validate(lineage: lineage)
    let runSeed = seed ?? pipeline.seed ?? PlannedRun.derivedSeed(lineage: lineage, night: night)
    guard runSeed <= Pipeline.maximumSeed else { throw PipelineError.seedOutOfRange(runSeed) }
    let key = PlannedRun.uniqueKey(lineage: lineage, night: night)
    let common: [String: JSONValue] = [
        "lineage": .string(lineage), "night": .string(night.description), "seed": .int(Int(runSeed)),
    ]
    let steps = PipelineGraph.topologicalOrder(pipeline.steps).map { spec in
        PlannedStep(name: spec.name, kind: spec.kind.rawValue,
                    input: .object(common.merging(pipeline.parameters(for: spec.kind)) { shared, _ in shared }),
                    dependsOn: spec.dependsOn, maxAttempts: spec.maxAttempts, leaseSeconds: spec.leaseSeconds,
                    priority: spec.priority, timeoutSeconds: spec.timeoutSeconds)
    }
    let manifest: JSONValue = .object([
        "format": .int(Pipeline.formatVersion),
        "pipeline": .string(pipeline.name),
        "pipeline_digest": .string(pipeline.digest.hex),
        "definition": pipeline.definition,
        "lineage": .string(lineage),
        "night": .string(night.description),
        "seed": .int(Int(runSeed)),
        // `"auto"` when each step resolves its own count: the steps' outputs and `arithmetic` record what ran.
        "blas_threads": pipeline.train.blasThreads.jsonValue,
        "unique_key": .string(key),
        "held_out_rule": .int(PlannedRun.heldOutRule),
    ])
    return PlannedRun(name: pipeline.name, uniqueKey: key, manifest: manifest, steps: steps)
}

extension Pipeline {
    /// The parameters a step of `kind` reads from its input (besides lineage, night and seed).
    ///
    /// eval scores sequences the way train saw them, so it gets the same `max_length` and `blas_threads`
    /// (thread count changes the low bits of every score, DESIGN.md "Training and resume").
    public func parameters(for kind: StepKind) -> [String: JSONValue] {
        switch kind {
        case .prune:
            // Only when on, as in the pipeline: a prune input without it lists the versions trained on expired text.
            return Self.objectFields(prune)
        case .sample:
            return [
                "sample_size": .int(sample.sampleSize), "held_out_fraction": .double(sample.heldOutFraction),
                "max_uses_per_example": .int(privacy.maxUsesPerExample),
                "max_tokens_per_night": .int(privacy.maxTokensPerNight),
                // The sample step fixes the night's weights parent (the active version) when train starts from it.
                TrainInit.sampleField: .string(train.initialWeights.rawValue),
            ].merging(Self.laterRules(for: kind)) { _, rule in rule }
        case .train:
            var fields = Self.objectFields(train)
            fields["device"] = Self.objectValue(device)
            fields.merge(Self.laterRules(for: kind)) { _, rule in rule }
            return fields
        case .eval:
            var fields = Self.objectFields(eval)
            fields["max_length"] = .int(train.maxLength)
            // An `auto` eval resolves on the machine that claims it, and records what it ran at, as train does.
            fields["blas_threads"] = train.blasThreads.jsonValue
            // Scored in the turn format the candidate was trained in (only when set, as in train's input).
            if let chatFormat = train.chatFormat { fields["chat_format"] = .string(chatFormat.rawValue) }
            // Scored with the base kept as train kept it: the two storages differ in the last bits.
            fields["base_weights"] = .string(train.baseWeights.rawValue)
            // And with the same forward products: int8 and sgemm differ in the fourth digit of a score.
            fields["forward_products"] = .string(train.forwardProducts.rawValue)
            // And with the prompts tokenized as train tokenized them (`LaterRule.promptMarkersAsText`).
            fields.merge(Self.laterRules(for: kind)) { _, rule in rule }
            return fields
        case .promote:
            return [:]
        }
    }

    /// The markers of every rule a step of `kind` gained after runs were recorded (`LaterRule`).
    private static func laterRules(for kind: StepKind) -> [String: JSONValue] {
        Dictionary(uniqueKeysWithValues: LaterRule.all.filter { $0.kinds.contains(kind) }.map { ($0.field, .string($0.value)) })
    }

    private static func objectValue<T: Encodable>(_ value: T) -> JSONValue {
        do { return try JSONDecoder().decode(JSONValue.self, from: JSON.canonical(value)) } catch {
            preconditionFailure("\(T.self) encodes to JSON that does not decode: \(error)")
        }
    }

    static func objectFields<T: Encodable>(_ value: T) -> [String: JSONValue] {
        objectValue(value).objectValue ?? [:]
    }
}
