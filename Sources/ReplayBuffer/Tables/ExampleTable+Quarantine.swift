import Storage

/// The quarantine mark on `replay_examples` (`quarantined_at`, `quarantined_night`): training examples a
/// `worse` night blamed, kept out of sampling and of the held-out top-up until released or erased. Held-out
/// examples are never marked: the gate's set stays pinned.
extension ExampleTable {
    /// Marks the unmarked training examples of `sources` in `lineage`; returns how many.
    static func quarantine(_ db: any SQLConnection, lineage: String, sources: [String], night: String, now: Int64) throws -> Int {
        var marked = 0
        for source in Set(sources).sorted() {
            marked += try db.run("""
                UPDATE replay_examples SET quarantined_at = ?, quarantined_night = ?
                WHERE lineage = ? AND source = ? AND split = 'train' AND quarantined_at IS NULL
                """, now, night, lineage, source)
        }
        return marked
    }

    /// Clears the mark of every example of `source` in `lineage`; returns how many were marked.
    static func release(_ db: any SQLConnection, lineage: String, source: String) throws -> Int {
        try db.run("""
            UPDATE replay_examples SET quarantined_at = NULL, quarantined_night = NULL
            WHERE lineage = ? AND source = ? AND quarantined_at IS NOT NULL
            """, lineage, source)
    }

    static func count(_ db: any SQLConnection, lineage: String, source: String) throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM replay_examples WHERE lineage = ? AND source = ?", lineage, source)
            .integerValue ?? 0)
    }

    /// Per source of `lineage`'s training examples created in (`after`, `upTo`] (no bound when nil): how many
    /// there are and how many are quarantined, by source name.
    static func trainSources(_ db: any SQLConnection, lineage: String, after: Int64?, upTo: Int64?) throws
        -> [(source: String, examples: Int, quarantined: Int)] {
        try db.query("""
            SELECT source, count(*) AS examples, count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined
            FROM replay_examples WHERE lineage = ? AND split = 'train'
            AND (CAST(? AS BIGINT) IS NULL OR created_at > ?) AND (CAST(? AS BIGINT) IS NULL OR created_at <= ?)
            GROUP BY source ORDER BY source
            """, lineage, after, after, upTo, upTo).map { row in
            guard let source = row.string("source"), let examples = row.int("examples"), let quarantined = row.int("quarantined") else {
                throw ReplayError.corruptRow(table: "replay_examples", column: "source")
            }
            return (source, examples, quarantined)
        }
    }

    /// The source of each stored example among `ids` (an erased one is absent).
    static func sources(_ db: any SQLConnection, ids: [String]) throws -> [String: String] {
        var found: [String: String] = [:]
        for id in Set(ids) {
            if let source = try db.queryOne("SELECT source FROM replay_examples WHERE id = ?", id)?.string("source") {
                found[id] = source
            }
        }
        return found
    }
}
