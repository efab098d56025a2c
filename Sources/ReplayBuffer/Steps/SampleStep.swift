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
    /// How the held-out set is topped up before the sample is drawn (a replayed run uses the rule it recorded).
    public var heldOutRule: HeldOutSplit.Rule
    /// The pairs the gate will ask for (the run's `eval.min_pairs`): under `.fillFirst` the top-up reaches at
    /// least this many held-out examples, whatever the lineage's `min_held_out`.
    public var gateMinimum: Int
    /// Which eligible examples the night takes first when its budget cannot hold them all.
    public var order: SampleOrder

    public init(maxExamples: Int? = nil, maxTokens: Int? = nil, maxHeldOut: Int? = nil, maxUses: Int? = nil,
                heldOutRule: HeldOutSplit.Rule = .current, gateMinimum: Int = 0, order: SampleOrder = .newFirst) {
        self.maxExamples = maxExamples
        self.maxTokens = maxTokens
        self.maxHeldOut = maxHeldOut
        self.maxUses = maxUses
        self.heldOutRule = heldOutRule
        self.gateMinimum = gateMinimum
        self.order = order
    }

    enum CodingKeys: String, CodingKey {
        case maxExamples = "max_examples", maxTokens = "max_tokens", maxHeldOut = "max_held_out", maxUses = "max_uses"
        case heldOutRule = "held_out_rule", gateMinimum = "gate_min_pairs", order
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(maxExamples: try c.decodeIfPresent(Int.self, forKey: .maxExamples),
                  maxTokens: try c.decodeIfPresent(Int.self, forKey: .maxTokens),
                  maxHeldOut: try c.decodeIfPresent(Int.self, forKey: .maxHeldOut),
                  maxUses: try c.decodeIfPresent(Int.self, forKey: .maxUses),
                  // Written before the rule was recorded: the rule of that time.
                  heldOutRule: try c.decodeIfPresent(HeldOutSplit.Rule.self, forKey: .heldOutRule) ?? .halfCapped,
                  gateMinimum: try c.decodeIfPresent(Int.self, forKey: .gateMinimum) ?? 0,
                  // Written before the order was recorded: one weighted draw over every eligible example.
                  order: try c.decodeIfPresent(SampleOrder.self, forKey: .order) ?? .weighted)
    }
}

/// Which eligible examples a night takes first when its budget (examples or tokens) cannot hold them all.
public enum SampleOrder: String, Sendable, Codable {
    /// Examples no night has trained on yet come first, each group in weighted order: a warm-started candidate
    /// already carries what its weights parent learned from the used ones, so the budget goes to what is new,
    /// and used examples with budget left fill the rest as rehearsal.
    case newFirst = "new_first"
    /// One weighted draw over every eligible example (runs planned before the order was recorded).
    case weighted
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
/// Under `SampleOrder.newFirst` the examples no night has used yet are ranked before the used ones. Taken in
/// that order, an example joins the night's training set when it fits in the token budget (examples
/// that do not fit are passed over and spend nothing) until `maxExamples`. Each taken example records one use
/// for the night; sampling a night again (a retry, a replay) first clears that night's uses, so the budget is
/// spent once per night. Uses are recorded when the sample is drawn (in the pipeline: when the sample step
/// completes, `plan` then `apply`), whether or not training later succeeds.
public enum SampleStep {
    public static func run(store: ReplayStore, blobs: any BlobStorage, lineage: String, seed: UInt64, night: String,
                           policy: SamplePolicy = SamplePolicy()) throws -> SampleReport {
        try LineageName.validate(lineage)
        let db = store.database
        let request = SampleRequest(lineage: lineage, seed: seed, night: night, policy: policy, now: store.clock.nowMilliseconds())
        return try db.replayTransaction {
            let drawn = try draw(db, request)
            // Blobs are written before the uses commit, so committed uses always name snapshots that exist.
            try drawn.put(in: blobs)
            return drawn.report
        }
    }

    /// The sample `run` would draw, with its snapshots written to `blobs`, but nothing recorded in the database
    /// (the pipeline's sample step: the uses and the held-out top-up are written in its job's completion,
    /// `apply`).
    public static func plan(store: ReplayStore, blobs: any BlobStorage, lineage: String, seed: UInt64, night: String,
                            policy: SamplePolicy = SamplePolicy()) throws -> SamplePlan {
        try LineageName.validate(lineage)
        let request = SampleRequest(lineage: lineage, seed: seed, night: night, policy: policy, now: store.clock.nowMilliseconds())
        let drawn = try store.database.rehearse { try draw(store.database, request) }
        try drawn.put(in: blobs)
        return SamplePlan(request: request, report: drawn.report,
                          contents: [(drawn.report.trainSnapshot, drawn.trainIDs), (drawn.report.heldOutSnapshot, drawn.heldOutIDs)])
    }

    /// Deletes the planned snapshots that hold an example erased since `plan` wrote them: being recorded
    /// nowhere until `apply` commits, no erasure could find them. For a completion that `apply` refused.
    public static func discardErased(_ plan: SamplePlan, store: ReplayStore, blobs: any BlobStorage) throws {
        for (digest, ids) in plan.contents
        where try ids.contains(where: { try !ExampleTable.exists(store.database, id: $0) }) {
            try blobs.remove(digest)
        }
    }


    /// Draws `request` again inside the caller's transaction on `db` (a job's completion transaction) and
    /// records it: the held-out top-up and the night's uses. Returns the report, which equals the planned one
    /// unless the buffer changed in between.
    public static func apply(_ request: SampleRequest, in db: any SQLConnection) throws -> SampleReport {
        try LineageName.validate(request.lineage)
        return try db.replayTransaction { try draw(db, request).report }
    }

    private struct Drawn {
        let report: SampleReport
        let train: Data
        let heldOut: Data
        let trainIDs: [String]
        let heldOutIDs: [String]

        func put(in blobs: any BlobStorage) throws {
            _ = try blobs.put(train)
            _ = try blobs.put(heldOut)
        }
    }

    /// The whole sample, writes included, inside the caller's transaction.
    private static func draw(_ db: any SQLConnection, _ request: SampleRequest) throws -> Drawn {
        let (lineage, seed, night, policy, now) = (request.lineage, request.seed, request.night, request.policy, request.now)
        do {
            let budget = try LineageTable.policy(db, lineage: lineage)
            try HeldOutSplit.topUp(db, lineage: lineage, policy: budget, gateMinimum: policy.gateMinimum, rule: policy.heldOutRule)
            try UseTable.clear(db, lineage: lineage, night: night)

            let maxUses = min(budget.maxUsesPerExample, policy.maxUses ?? .max)
            let eligible = try ExampleTable.eligible(db, lineage: lineage, maxUses: maxUses, excludingNight: night)
            let spent = try ExampleTable.spentCount(db, lineage: lineage, maxUses: maxUses, excludingNight: night)
            let tokenLimit = min(budget.maxTokensPerNight, policy.maxTokens ?? .max)
            let exampleLimit = policy.maxExamples ?? .max

            var ranked = rank(eligible, seed: seed, night: night)
            if policy.order == .newFirst {
                ranked = ranked.filter { $0.uses == 0 } + ranked.filter { $0.uses > 0 }
            }
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

            let train = DatasetSnapshot.encode(taken.map(DatasetSnapshot.line))
            let held = DatasetSnapshot.encode(heldOut.map(DatasetSnapshot.line))
            let (trainDigest, heldOutDigest) = (Digest.sha256(train), Digest.sha256(held))
            // Recorded with the uses, in the transaction that read the examples: an erasure either comes before
            // (and nothing erased is in the snapshots) or after (and finds both blobs here).
            try BlobContentsTable.record(db, blob: trainDigest, kind: .trainSnapshot, lineage: lineage,
                                         exampleIDs: taken.map(\.id), now: now)
            try BlobContentsTable.record(db, blob: heldOutDigest, kind: .heldOutSnapshot, lineage: lineage,
                                         exampleIDs: heldOut.map(\.id), now: now)
            let report = SampleReport(
                lineage: lineage, night: night, seed: seed, trainSnapshot: trainDigest, heldOutSnapshot: heldOutDigest,
                trainExamples: taken.count, trainTokens: tokens, heldOutExamples: heldOut.count,
                heldOutTokens: heldOut.reduce(0) { $0 + $1.tokenCount }, eligible: eligible.count, spent: spent,
                passedOverForTokens: overBudget, tokenBudget: tokenLimit, tokenCountsEstimated: taken.contains { !$0.tokenCountExact })
            return Drawn(report: report, train: train, heldOut: held, trainIDs: taken.map(\.id), heldOutIDs: heldOut.map(\.id))
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

/// A sample drawn but not yet recorded: what `SampleStep.apply` must draw again, and the example ids each
/// snapshot blob already written holds (the two snapshots may be one blob: both empty).
public struct SamplePlan: Sendable {
    public let request: SampleRequest
    public let report: SampleReport
    public let contents: [(blob: Digest, exampleIDs: [String])]
}

/// What a sample draws from: the same request on the same buffer draws the same sample.
public struct SampleRequest: Sendable, Equatable {
    public let lineage: String
    public let seed: UInt64
    public let night: String
    public let policy: SamplePolicy
    /// When the uses are recorded (milliseconds since the epoch).
    public let now: Int64
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
