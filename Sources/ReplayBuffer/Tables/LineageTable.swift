import Storage

/// `replay_lineages`: one row of settings per lineage (TTL, privacy budget, held-out split).
///
/// A lineage gets its row, with `LineagePolicy.defaults`, the first time anything is imported into it or a
/// setting of it is changed.
enum LineageTable {
    static let create = """
        CREATE TABLE replay_lineages (
            name TEXT PRIMARY KEY,
            ttl_days INTEGER NOT NULL CHECK (ttl_days BETWEEN 1 AND 36500),
            max_uses_per_example INTEGER NOT NULL CHECK (max_uses_per_example >= 1),
            max_tokens_per_night INTEGER NOT NULL CHECK (max_tokens_per_night >= 1),
            held_out_fraction REAL NOT NULL CHECK (held_out_fraction >= 0 AND held_out_fraction <= 0.5),
            min_held_out INTEGER NOT NULL CHECK (min_held_out >= 0),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;

        """

    /// `create` on PostgreSQL: 64-bit times, double-precision fractions, names compared byte by byte as on SQLite.
    static let createOnPostgres = """
        CREATE TABLE replay_lineages (
            name TEXT COLLATE "C" PRIMARY KEY,
            ttl_days INTEGER NOT NULL CHECK (ttl_days BETWEEN 1 AND 36500),
            max_uses_per_example INTEGER NOT NULL CHECK (max_uses_per_example >= 1),
            max_tokens_per_night INTEGER NOT NULL CHECK (max_tokens_per_night >= 1),
            held_out_fraction DOUBLE PRECISION NOT NULL CHECK (held_out_fraction >= 0 AND held_out_fraction <= 0.5),
            min_held_out INTEGER NOT NULL CHECK (min_held_out >= 0),
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        );

        """

    static func ensure(_ db: any SQLConnection, lineage: String, now: Int64) throws {
        let d = LineagePolicy.defaults
        try db.run("""
            INSERT INTO replay_lineages (name, ttl_days, max_uses_per_example, max_tokens_per_night,
                                         held_out_fraction, min_held_out, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING
            """, lineage, d.ttlDays, d.maxUsesPerExample, d.maxTokensPerNight, d.heldOutFraction, d.minHeldOut, now, now)
    }

    /// The stored policy, or the defaults for a lineage that has none yet.
    static func policy(_ db: any SQLConnection, lineage: String) throws -> LineagePolicy {
        guard let row = try db.queryOne("SELECT * FROM replay_lineages WHERE name = ?", lineage) else {
            return .defaults
        }
        return try policy(row)
    }

    static func policy(_ row: Row) throws -> LineagePolicy {
        guard let ttl = row.int("ttl_days"), let uses = row.int("max_uses_per_example"),
              let tokens = row.int("max_tokens_per_night"), let fraction = row.double("held_out_fraction"),
              let minimum = row.int("min_held_out") else {
            throw ReplayError.corruptRow(table: "replay_lineages", column: "policy")
        }
        return LineagePolicy(ttlDays: ttl, maxUsesPerExample: uses, maxTokensPerNight: tokens,
                             heldOutFraction: fraction, minHeldOut: minimum)
    }

    static func write(_ db: any SQLConnection, lineage: String, policy p: LineagePolicy, now: Int64) throws {
        try ensure(db, lineage: lineage, now: now)
        try db.run("""
            UPDATE replay_lineages SET ttl_days = ?, max_uses_per_example = ?, max_tokens_per_night = ?,
                held_out_fraction = ?, min_held_out = ?, updated_at = ? WHERE name = ?
            """, p.ttlDays, p.maxUsesPerExample, p.maxTokensPerNight, p.heldOutFraction, p.minHeldOut, now, lineage)
    }

    static func names(_ db: any SQLConnection) throws -> [String] {
        try db.query("SELECT name FROM replay_lineages ORDER BY name").compactMap { $0.string("name") }
    }
}
