import AdaptCore
import Storage

/// `replay_imports`: one row per import with its counts (lines, imported, duplicates, skipped and the scrubber's
/// replacements per kind). Counts only: no text, no ids.
enum ImportTable {
    static let create = """
        CREATE TABLE replay_imports (
            id INTEGER PRIMARY KEY,
            lineage TEXT NOT NULL,
            at INTEGER NOT NULL,
            records INTEGER NOT NULL,
            imported INTEGER NOT NULL,
            duplicates INTEGER NOT NULL,
            skipped INTEGER NOT NULL,
            scrubbed TEXT NOT NULL
        ) STRICT;

        """

    /// Creates the row first (counts filled in by `finish`) so examples can refer to it.
    static func start(_ db: Database, lineage: String, now: Int64) throws -> Int64 {
        try db.run("INSERT INTO replay_imports (lineage, at, records, imported, duplicates, skipped, scrubbed) VALUES (?, ?, 0, 0, 0, 0, '{}')",
                   lineage, now)
        return db.lastInsertRowID
    }

    static func finish(_ db: Database, id: Int64, records: Int, imported: Int, duplicates: Int, skipped: Int,
                       scrubbed: ScrubCounts) throws {
        try db.run("UPDATE replay_imports SET records = ?, imported = ?, duplicates = ?, skipped = ?, scrubbed = ? WHERE id = ?",
                   records, imported, duplicates, skipped, JSON.canonicalString(scrubbed.byKind), id)
    }

    /// The number of imports of `lineage` and their scrubber counts summed per kind.
    static func totals(_ db: Database, lineage: String) throws -> (imports: Int, scrubbed: ScrubCounts) {
        var total = ScrubCounts()
        let rows = try db.query("SELECT scrubbed FROM replay_imports WHERE lineage = ? ORDER BY id", lineage)
        for row in rows {
            let text = row.string("scrubbed") ?? "{}"
            let counts = try JSON.decode([String: Int].self, from: text, context: "replay_imports.scrubbed")
            for (kind, n) in counts { total.add(ScrubKind(rawValue: kind), n) }
        }
        return (rows.count, total)
    }
}
