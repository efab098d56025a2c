import AdaptCore
import Storage

/// Additions to a run's manifest made while it runs (the pipeline records each step's input and output
/// digests there as the step completes). The manifest is the run's own record, not its history: events stay
/// append-only; a key is only ever added under `section`, never changed by anyone else.
extension JobQueue {
    /// Sets `manifest[section][key] = value` for `run` on `db`, the connection whose transaction the caller
    /// holds (a completion hook), so the record commits with the job's completion or not at all.
    ///
    /// `section` and `key` become a JSON path, so only plain names (letters, digits, `-`, `_`) are recorded;
    /// returns false (and records nothing) for any other name.
    @discardableResult
    public static func recordInManifest(run: RunID, section: String, key: String, value: JSONValue, in db: Database) throws -> Bool {
        guard isPlainName(section) && isPlainName(key) else { return false }
        // json_set creates the last path element only, so the section is created first when missing.
        try db.run("""
            UPDATE job_runs SET manifest = json_set(
                CASE WHEN json_type(manifest, '$."\(section)"') = 'object' THEN manifest
                     ELSE json_set(manifest, '$."\(section)"', json('{}')) END,
                '$."\(section)"."\(key)"', json(?))
            WHERE id = ?
            """, JSON.canonicalString(value), run)
        return true
    }

    private static func isPlainName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
    }
}
