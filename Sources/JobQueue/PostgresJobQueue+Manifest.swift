import AdaptCore
import Storage

/// Additions to a run's manifest on PostgreSQL (`JobQueue+Manifest.swift` on SQLite).
extension PostgresJobQueue {
    /// Sets `manifest[section][key] = value` for `run` on `connection`, inside the caller's transaction (a
    /// completion hook). The manifest row is locked, read, changed and written back as canonical JSON, the form
    /// every manifest is stored in. Returns false (and records nothing) unless both names are plain.
    @discardableResult
    public static func recordInManifest(run: RunID, section: String, key: String, value: JSONValue,
                                        in connection: PostgresConnection) throws -> Bool {
        guard isPlainName(section) && isPlainName(key) else { return false }
        guard let text = try connection.queryOne("SELECT manifest FROM job_runs WHERE id = $1 FOR UPDATE", run)?
            .string("manifest") else { throw JobQueueError.unknownRun(run) }
        var manifest = try JobJSON.decode(text, context: "the manifest of \(run)")
        guard case var .object(fields) = manifest else { return false }
        var entries: [String: JSONValue] = [:]
        if case let .object(existing)? = fields[section] { entries = existing }
        entries[key] = value
        fields[section] = .object(entries)
        manifest = .object(fields)
        try connection.run("UPDATE job_runs SET manifest = $1 WHERE id = $2", JobJSON.canonicalString(manifest), run)
        return true
    }

    private static func isPlainName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
        }
    }
}
