import AdaptCore
import Storage

/// `replay_examples`: the scrubbed examples. All SQL that touches the table lives here.
enum ExampleTable {
    static let create = """
        CREATE TABLE replay_examples (
            id TEXT PRIMARY KEY,
            lineage TEXT NOT NULL REFERENCES replay_lineages (name),
            system TEXT,
            prompt TEXT NOT NULL,
            completion TEXT NOT NULL CHECK (completion <> ''),
            source TEXT NOT NULL,
            weight REAL NOT NULL CHECK (weight > 0),
            token_count INTEGER NOT NULL CHECK (token_count >= 0),
            token_count_exact INTEGER NOT NULL CHECK (token_count_exact IN (0, 1)),
            split TEXT NOT NULL CHECK (split IN ('train', 'held_out')),
            heldout_key TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            import_id INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX replay_examples_lineage ON replay_examples (lineage, split, heldout_key);
        CREATE INDEX replay_examples_expiry ON replay_examples (lineage, expires_at);
        CREATE INDEX replay_examples_source ON replay_examples (source, lineage);

        """

    /// `create`, `addTurns` and `addQuarantine` on PostgreSQL. Identifiers compare byte by byte (`COLLATE "C"`,
    /// SQLite's BINARY), so every `ORDER BY` gives the same order, and the same snapshot bytes, on both backends.
    /// The text columns collect no statistics: ANALYZE would copy sampled values into `pg_statistic`, where
    /// erasing the row would not reach them.
    static let createOnPostgres = """
        CREATE TABLE replay_examples (
            id TEXT COLLATE "C" PRIMARY KEY,
            lineage TEXT COLLATE "C" NOT NULL REFERENCES replay_lineages (name),
            system TEXT,
            prompt TEXT NOT NULL,
            completion TEXT NOT NULL CHECK (completion <> ''),
            source TEXT COLLATE "C" NOT NULL,
            weight DOUBLE PRECISION NOT NULL CHECK (weight > 0),
            token_count INTEGER NOT NULL CHECK (token_count >= 0),
            token_count_exact INTEGER NOT NULL CHECK (token_count_exact IN (0, 1)),
            split TEXT NOT NULL CHECK (split IN ('train', 'held_out')),
            heldout_key TEXT COLLATE "C" NOT NULL,
            created_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL,
            import_id BIGINT NOT NULL,
            turns TEXT,
            quarantined_at BIGINT,
            quarantined_night TEXT COLLATE "C"
        );
        ALTER TABLE replay_examples ALTER COLUMN system SET STATISTICS 0, ALTER COLUMN prompt SET STATISTICS 0,
            ALTER COLUMN completion SET STATISTICS 0, ALTER COLUMN turns SET STATISTICS 0;
        CREATE INDEX replay_examples_lineage ON replay_examples (lineage, split, heldout_key);
        CREATE INDEX replay_examples_expiry ON replay_examples (lineage, expires_at);
        CREATE INDEX replay_examples_source ON replay_examples (source, lineage);

        """

    /// Whole conversations: every turn of an example of more than one exchange, as canonical JSON
    /// (`[{"content": …, "role": …}, …]`); NULL for a single exchange, whose turns are its system, prompt and
    /// completion. The text stays in the example's row, so erasing the row erases every turn with it.
    static let addTurns = """
        ALTER TABLE replay_examples ADD COLUMN turns TEXT;

        """

    /// The quarantine mark (`ExampleTable+Quarantine.swift`): when, and by which night's run, a training example
    /// was kept out of training; NULL for an example that may be sampled.
    static let addQuarantine = """
        ALTER TABLE replay_examples ADD COLUMN quarantined_at INTEGER;
        ALTER TABLE replay_examples ADD COLUMN quarantined_night TEXT;

        """

    /// What an insert needs; the id, key and split are computed by the importer.
    struct NewRow {
        let id: String
        let lineage: String
        let system: String?
        let prompt: String
        let completion: String
        let turns: [Turn]?
        let source: String
        let weight: Double
        let tokenCount: Int
        let tokenCountExact: Bool
        let split: Split
        let heldOutKey: String
        let createdAt: Int64
        let expiresAt: Int64
        let importID: Int64
        /// Set only when replay restores a quarantined example (`LineageDump`).
        var quarantinedAt: Int64? = nil
        var quarantinedNight: String? = nil
    }

    /// Inserts `row` unless an example with its id exists; true when inserted.
    static func insert(_ db: any SQLConnection, _ row: NewRow) throws -> Bool {
        try db.run("""
            INSERT INTO replay_examples (id, lineage, system, prompt, completion, turns, source, weight, token_count,
                token_count_exact, split, heldout_key, created_at, expires_at, import_id, quarantined_at, quarantined_night)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
            """, row.id, row.lineage, row.system, row.prompt, row.completion, row.turns.map(JSON.canonicalString),
            row.source, row.weight, row.tokenCount, row.tokenCountExact, row.split.rawValue, row.heldOutKey,
            row.createdAt, row.expiresAt, row.importID, row.quarantinedAt, row.quarantinedNight) == 1
    }

    /// The `turns` column of `row`, decoded (nil for a single exchange).
    static func turns(_ row: Row) throws -> [Turn]? {
        guard let text = row.string("turns") else { return nil }
        guard let turns = try? JSON.decode([Turn].self, from: text, context: "replay_examples.turns"),
              Conversation.lastExchange(turns) != nil else {
            throw ReplayError.corruptRow(table: "replay_examples", column: "turns")
        }
        return turns
    }

    static let selectColumns = """
        SELECT e.*, (SELECT count(*) FROM replay_uses u WHERE u.example_id = e.id) AS uses FROM replay_examples e
        """

    static func list(_ db: any SQLConnection, lineage: String?, split: Split?) throws -> [Example] {
        var clauses: [String] = []
        var arguments: [SQLBindable] = []
        if let lineage { clauses.append("e.lineage = ?"); arguments.append(lineage) }
        if let split { clauses.append("e.split = ?"); arguments.append(split.rawValue) }
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        return try db.query(selectColumns + whereClause + " ORDER BY e.lineage, e.created_at, e.id", arguments: arguments)
            .map(example)
    }

    static func example(_ row: Row) throws -> Example {
        guard let id = row.string("id"), let lineage = row.string("lineage"), let prompt = row.string("prompt"),
              let completion = row.string("completion"), let source = row.string("source"),
              let weight = row.double("weight"), let tokens = row.int("token_count"),
              let exact = row.bool("token_count_exact"), let created = row.int64("created_at"),
              let expires = row.int64("expires_at") else {
            throw ReplayError.corruptRow(table: "replay_examples", column: "a required column")
        }
        guard let split = row.string("split").flatMap(Split.init(rawValue:)) else {
            throw ReplayError.corruptRow(table: "replay_examples", column: "split")
        }
        return Example(id: id, lineage: lineage, system: row.string("system"), prompt: prompt, completion: completion,
                       source: source, weight: weight, tokenCount: tokens, tokenCountExact: exact, split: split,
                       createdAt: created, expiresAt: expires, uses: row.int("uses") ?? 0, turns: try turns(row),
                       quarantinedAt: row.int64("quarantined_at"), quarantinedNight: row.string("quarantined_night"))
    }

    /// Train examples of `lineage` with fewer than `maxUses` uses on nights other than `night`, in id order;
    /// quarantined examples are never eligible.
    static func eligible(_ db: any SQLConnection, lineage: String, maxUses: Int, excludingNight night: String) throws -> [Example] {
        try db.query("""
            SELECT e.*, (SELECT count(*) FROM replay_uses u WHERE u.example_id = e.id AND u.night <> ?) AS uses
            FROM replay_examples e WHERE e.lineage = ? AND e.split = 'train' AND e.quarantined_at IS NULL ORDER BY e.id
            """, night, lineage).map(example).filter { $0.uses < maxUses }
    }

    /// Train examples of `lineage` that have spent their budget (counting every night).
    static func spentCount(_ db: any SQLConnection, lineage: String, maxUses: Int, excludingNight night: String) throws -> Int {
        Int(try db.scalar("""
            SELECT count(*) FROM replay_examples e WHERE e.lineage = ? AND e.split = 'train'
            AND (SELECT count(*) FROM replay_uses u WHERE u.example_id = e.id AND u.night <> ?) >= ?
            """, lineage, night, maxUses).integerValue ?? 0)
    }

    /// Held-out examples of `lineage` in key order (the order the minimum top-up and the eval cap use).
    static func heldOut(_ db: any SQLConnection, lineage: String) throws -> [Example] {
        try db.query(selectColumns + " WHERE e.lineage = ? AND e.split = 'held_out' ORDER BY e.heldout_key, e.id", lineage)
            .map(example)
    }

    static func count(_ db: any SQLConnection, lineage: String, split: Split? = nil) throws -> Int {
        if let split {
            return Int(try db.scalar("SELECT count(*) FROM replay_examples WHERE lineage = ? AND split = ?",
                                     lineage, split.rawValue).integerValue ?? 0)
        }
        return Int(try db.scalar("SELECT count(*) FROM replay_examples WHERE lineage = ?", lineage).integerValue ?? 0)
    }

    /// Moves up to `count` never-used train examples to held-out, lowest held-out key first (those of
    /// `importID` before any other when given). Returns how many. A quarantined example is suspect: it stays
    /// out of the gate's yardstick as it stays out of training.
    static func promoteUnusedToHeldOut(_ db: any SQLConnection, lineage: String, count: Int, preferringImport importID: Int64? = nil) throws -> Int {
        guard count > 0 else { return 0 }
        return try db.run("""
            UPDATE replay_examples SET split = 'held_out' WHERE id IN (
                SELECT e.id FROM replay_examples e WHERE e.lineage = ? AND e.split = 'train' AND e.quarantined_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM replay_uses u WHERE u.example_id = e.id)
                ORDER BY e.import_id IS DISTINCT FROM ?, e.heldout_key, e.id LIMIT ?)
            """, lineage, importID, count)
    }

    /// Up to `limit` ids that start with `prefix` (lowercase hex, so no LIKE wildcard can hide in it), in order.
    static func ids(_ db: any SQLConnection, startingWith prefix: String, limit: Int) throws -> [String] {
        try db.query("SELECT id FROM replay_examples WHERE substr(id, 1, length(?)) = ? ORDER BY id LIMIT ?",
                     prefix, prefix, limit).compactMap { $0.string("id") }
    }

    static func count(_ db: any SQLConnection, idsStartingWith prefix: String) throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM replay_examples WHERE substr(id, 1, length(?)) = ?", prefix, prefix)
            .integerValue ?? 0)
    }

    static func exists(_ db: any SQLConnection, id: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM replay_examples WHERE id = ?", id) != nil
    }

    static func ids(_ db: any SQLConnection, source: String, lineage: String?) throws -> [String] {
        let rows = try lineage.map {
            try db.query("SELECT id FROM replay_examples WHERE source = ? AND lineage = ? ORDER BY id", source, $0)
        } ?? db.query("SELECT id FROM replay_examples WHERE source = ? ORDER BY id", source)
        return rows.compactMap { $0.string("id") }
    }

    /// Training examples of `lineage` whose TTL has passed at `now`. Held-out examples are kept whatever their
    /// age: the held-out set is pinned to the lineage and only grows (DESIGN.md, "Evaluation and promotion"),
    /// so the gate keeps comparing nights on the same examples; `adapt data forget` still erases them on request.
    static func expiredIDs(_ db: any SQLConnection, lineage: String, now: Int64) throws -> [String] {
        try db.query("SELECT id FROM replay_examples WHERE lineage = ? AND split = 'train' AND expires_at <= ? ORDER BY id",
                     lineage, now).compactMap { $0.string("id") }
    }

    static func delete(_ db: any SQLConnection, id: String) throws -> Int {
        try db.run("DELETE FROM replay_examples WHERE id = ?", id)
    }

    /// Recomputes every expiry of `lineage` from its creation time and a new TTL.
    static func reschedule(_ db: any SQLConnection, lineage: String, ttlMilliseconds: Int64) throws {
        try db.run("UPDATE replay_examples SET expires_at = created_at + ? WHERE lineage = ?", ttlMilliseconds, lineage)
    }

    static func setTokenCount(_ db: any SQLConnection, id: String, count: Int, exact: Bool) throws {
        try db.run("UPDATE replay_examples SET token_count = ?, token_count_exact = ? WHERE id = ?", count, exact, id)
    }

    /// Per-lineage aggregates for `adapt data stats`.
    static func aggregates(_ db: any SQLConnection, lineage: String) throws -> Row? {
        try db.queryOne("""
            SELECT count(*) AS examples,
                   count(*) FILTER (WHERE split = 'train') AS train,
                   count(*) FILTER (WHERE split = 'held_out') AS held_out,
                   coalesce(sum(token_count), 0) AS tokens,
                   count(*) FILTER (WHERE token_count_exact = 0) AS estimated,
                   count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined,
                   min(created_at) AS oldest, max(created_at) AS newest,
                   min(CASE WHEN split = 'train' THEN expires_at END) AS next_expiry
            FROM replay_examples WHERE lineage = ?
            """, lineage)
    }
}
