import AdaptCore
import Storage

/// Per-example held-out scores, keyed by (base model digest, adapter digest or base, example digest), so the
/// incumbent is scored once per example rather than every night (issue: "Cached by (model digest, adapter
/// digest, example digest)"). The example digest is the hash of the example's formatted prompt and
/// completion, so an edited example is rescored; its text is never stored here.
public struct ScoreCache: Sendable {
    /// Which weights produced a score: the base model alone or with an adapter.
    public enum Weights: Sendable, Hashable {
        case base
        case adapter(Digest)

        var key: String {
            switch self {
            case .base: return "base"
            case let .adapter(digest): return digest.hex
            }
        }
    }

    public struct Entry: Sendable, Equatable {
        public let example: Digest
        public let meanNLL: Double
        public let tokens: Int

        public init(example: Digest, meanNLL: Double, tokens: Int) {
            self.example = example
            self.meanNLL = meanNLL
            self.tokens = tokens
        }
    }

    public let connection: any SQLConnection
    public let clock: any Clock

    /// Opens the cache on `connection` (either backend), creating or upgrading the registry's tables.
    public init(connection: any SQLConnection, clock: any Clock = SystemClock()) throws {
        try RegistrySchema.migrate(connection)
        self.connection = connection
        self.clock = clock
    }

    /// The cache of a state directory's SQLite database.
    public init(database: Database, clock: any Clock = SystemClock()) throws {
        try self.init(connection: database, clock: clock)
    }

    /// The same cache on `other`, already migrated: a connection in the middle of a transaction (a job's
    /// completion), whose writes then commit or roll back with it.
    public func on(_ other: any SQLConnection) -> ScoreCache { ScoreCache(migrated: other, clock: clock) }

    private init(migrated connection: any SQLConnection, clock: any Clock) {
        self.connection = connection
        self.clock = clock
    }

    /// The cached scores among `examples`; examples not in the result must be scored.
    public func lookup(model: Digest, weights: Weights, examples: [Digest]) throws -> [Digest: Entry] {
        var found: [Digest: Entry] = [:]
        for example in examples {
            if let row = try connection.queryOne(
                "SELECT mean_nll, tokens FROM score_cache WHERE model_digest = ? AND adapter = ? AND example_digest = ?",
                model, weights.key, example), let nll = row.double("mean_nll"), let tokens = row.int("tokens") {
                found[example] = Entry(example: example, meanNLL: nll, tokens: tokens)
            }
        }
        return found
    }

    /// Records scores in one transaction; a score already cached for the same key is kept (scoring is
    /// deterministic, so a second value would be equal).
    public func store(model: Digest, weights: Weights, entries: [Entry]) throws {
        let now = clock.nowMilliseconds()
        try connection.transaction {
            for entry in entries {
                precondition(entry.meanNLL.isFinite, "a non-finite score must not be cached")
                try connection.run(
                    "INSERT INTO score_cache (model_digest, adapter, example_digest, mean_nll, tokens, created_at) "
                        + "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    model, weights.key, entry.example, entry.meanNLL, entry.tokens, now)
            }
        }
    }

    /// Drops the scores of one set of weights (e.g. after its adapter is pruned); returns how many.
    @discardableResult
    public func remove(model: Digest, weights: Weights) throws -> Int {
        try connection.transaction {
            try connection.run("DELETE FROM score_cache WHERE model_digest = ? AND adapter = ?", model, weights.key)
        }
    }
}
