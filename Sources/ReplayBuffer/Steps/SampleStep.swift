import AdaptCore
import Foundation
import Storage

/// Limits the pipeline may put on one night's sample, on top of the lineage's privacy budget (they can only
/// tighten it).
public struct SamplePolicy: Sendable, Equatable, Codable {
    /// At most this many training examples (nil: no limit besides the budget).
    public var maxExamples: Int?
    /// At most this many training tokens (nil: the lineage's `max_tokens_per_night`).
    public var maxTokens: Int?
    /// At most this many held-out examples, lowest held-out key first so the same ones are scored every night.
    public var maxHeldOut: Int?
    /// At most this many nights' training sets per example (nil: the lineage's `max_uses_per_example`).
    public var maxUses: Int?

    public init(maxExamples: Int? = nil, maxTokens: Int? = nil, maxHeldOut: Int? = nil, maxUses: Int? = nil) {
        self.maxExamples = maxExamples
        self.maxTokens = maxTokens
        self.maxHeldOut = maxHeldOut
        self.maxUses = maxUses
    }

    enum CodingKeys: String, CodingKey {
        case maxExamples = "max_examples", maxTokens = "max_tokens", maxHeldOut = "max_held_out", maxUses = "max_uses"
    }
}

/// The sample step's body: a deterministic weighted sample of a lineage's training examples within its
/// privacy budget, and the lineage's held-out set, each written as a `DatasetSnapshot` blob.
///
/// Sampling is weighted without replacement by Efraimidis–Spirakis keys (Information Processing Letters 97,
/// 2006): example i gets key log(u_i) / w_i with u_i uniform in (0, 1), and the examples are taken in
/// descending key order. u_i comes from `CounterRNG` (purpose `.datasetSample`) keyed by the seed, the night
/// and the example's id, so it does not depend on which other examples exist or on row order: the same seed,
/// night and buffer give the same snapshots byte for byte.
///
/// Taken in key order, an example joins the night's training set when it fits in the token budget (examples
/// that do not fit are passed over and spend nothing) until `maxExamples`. Each taken example records one use
/// for the night; sampling a night again (a retry, a replay) first clears that night's uses, so the budget is
/// spent once per night. Uses are recorded when the sample is drawn, whether or not training later succeeds.
public enum SampleStep {
    public static func run(store: ReplayStore, blobs: BlobStore, lineage: String, seed: UInt64, night: String,
                           policy: SamplePolicy = SamplePolicy()) throws -> SampleReport {
        try LineageName.validate(lineage)
        let db = store.database
        let now = store.clock.nowMilliseconds()
        return try db.transaction {
            let budget = try LineageTable.policy(db, lineage: lineage)
            try HeldOutSplit.topUp(db, lineage: lineage, policy: budget)
            try UseTable.clear(db, lineage: lineage, night: night)

            let maxUses = min(budget.maxUsesPerExample, policy.maxUses ?? .max)
            let eligible = try ExampleTable.eligible(db, lineage: lineage, maxUses: maxUses, excludingNight: night)
            let spent = try ExampleTable.spentCount(db, lineage: lineage, maxUses: maxUses, excludingNight: night)
            let tokenLimit = min(budget.maxTokensPerNight, policy.maxTokens ?? .max)
            let exampleLimit = policy.maxExamples ?? .max

            let ranked = rank(eligible, seed: seed, night: night)
            var taken: [Example] = []
            var tokens = 0
            var overBudget = 0
            for example in ranked where taken.count < exampleLimit {
                if tokens + example.tokenCount > tokenLimit { overBudget += 1; continue }
                taken.append(example)
                tokens += example.tokenCount
            }
            for example in taken {
                try UseTable.record(db, lineage: lineage, night: night, exampleID: example.id, tokens: example.tokenCount, now: now)
            }

            var heldOut = try ExampleTable.heldOut(db, lineage: lineage)
            if let cap = policy.maxHeldOut, heldOut.count > cap { heldOut = Array(heldOut.prefix(cap)) }

            // Blobs are written before the uses commit, so committed uses always name snapshots that exist.
            let trainDigest = try blobs.put(DatasetSnapshot.encode(taken.map(DatasetSnapshot.line)))
            let heldOutDigest = try blobs.put(DatasetSnapshot.encode(heldOut.map(DatasetSnapshot.line)))
            // Recorded with the uses, in the transaction that read the examples: an erasure either comes
            // before (and nothing erased is in the snapshots) or after (and finds both blobs here).
            try BlobContentsTable.record(db, blob: trainDigest, kind: .trainSnapshot, lineage: lineage,
                                         exampleIDs: taken.map(\.id), now: now)
            try BlobContentsTable.record(db, blob: heldOutDigest, kind: .heldOutSnapshot, lineage: lineage,
                                         exampleIDs: heldOut.map(\.id), now: now)
            return SampleReport(
                lineage: lineage, night: night, seed: seed, trainSnapshot: trainDigest, heldOutSnapshot: heldOutDigest,
                trainExamples: taken.count, trainTokens: tokens, heldOutExamples: heldOut.count,
                heldOutTokens: heldOut.reduce(0) { $0 + $1.tokenCount }, eligible: eligible.count, spent: spent,
                passedOverForTokens: overBudget, tokenBudget: tokenLimit, tokenCountsEstimated: taken.contains { !$0.tokenCountExact })
        }
    }

    /// Examples in descending Efraimidis–Spirakis key order (ties, which need equal u and weight, by id).
    static func rank(_ examples: [Example], seed: UInt64, night: String) -> [Example] {
        let rng = CounterRNG(seed: seed)
        let keyed = examples.map { example -> (Double, Example) in
            let step = stream(night: night, id: example.id)
            // uniform is in [0, 1); map to (0, 1] so log is finite.
            let u = 1 - rng.uniform(.datasetSample, step: step, index: 0)
            return (log(u) / example.weight, example)
        }
        return keyed.sorted { a, b in a.0 != b.0 ? a.0 > b.0 : a.1.id < b.1.id }.map(\.1)
    }

    /// The counter stream of one (night, example): the first 8 bytes of SHA-256 of both.
    static func stream(night: String, id: String) -> UInt64 {
        UInt64(Digest.sha256("sample:" + night + "\u{0}" + id).hex.prefix(16), radix: 16) ?? 0
    }
}

/// What a sample step produced; the job's output.
public struct SampleReport: Sendable, Equatable, Codable {
    public let lineage: String
    public let night: String
    public let seed: UInt64
    /// The training set snapshot (`DatasetSnapshot`), in sample order.
    public let trainSnapshot: Digest
    /// The held-out snapshot, in held-out key order.
    public let heldOutSnapshot: Digest
    public let trainExamples: Int
    public let trainTokens: Int
    public let heldOutExamples: Int
    public let heldOutTokens: Int
    /// Train examples with budget left before this night.
    public let eligible: Int
    /// Train examples that have used up `max_uses_per_example`.
    public let spent: Int
    /// Eligible examples passed over because they did not fit in the night's tokens.
    public let passedOverForTokens: Int
    public let tokenBudget: Int
    public let tokenCountsEstimated: Bool

    enum CodingKeys: String, CodingKey {
        case lineage, night, seed, eligible, spent
        case trainSnapshot = "train_snapshot", heldOutSnapshot = "held_out_snapshot"
        case trainExamples = "train_examples", trainTokens = "train_tokens"
        case heldOutExamples = "held_out_examples", heldOutTokens = "held_out_tokens"
        case passedOverForTokens = "passed_over_for_tokens", tokenBudget = "token_budget"
        case tokenCountsEstimated = "token_counts_estimated"
    }
}
