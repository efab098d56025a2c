import AdaptCore
import Foundation
import JobQueue
import Storage

/// The database: present, readable, intact (`PRAGMA quick_check`), and what its last run came to.
extension Doctor {
    static func databaseChecks(_ state: StateDirectory) -> [Check] {
        let path = state.database.path
        guard FileManager.default.fileExists(atPath: path) else {
            return [Check("database", .error, "\(path) does not exist: nothing has been stored in this state yet",
                          fix: "store the lineage's examples: adapt --state \(state.root.path) data import FILE --lineage L")]
        }
        let recover = "move \(path) aside, then recover what SQLite can read with "
            + "'sqlite3 \(path).moved .recover | sqlite3 \(path)', or restore it from a backup"
        let database: Database
        do { database = try Database(readingAt: path) } catch {
            return [Check("database", .error, "\(path) cannot be opened as an SQLite database", fix: recover)]
        }
        let problems: [String]
        do {
            // quick_check: every page and index entry is well formed (O(N), without integrity_check's index
            // cross-checks); it answers one row "ok", or up to 100 rows naming the damage.
            problems = try database.query("PRAGMA quick_check").compactMap { $0.string("quick_check") }.filter { $0 != "ok" }
        } catch {
            return [Check("database", .error, "\(path) cannot be read: it is damaged or not a database", fix: recover)]
        }
        guard problems.isEmpty else {
            let shown = problems.prefix(3).joined(separator: "; ") + (problems.count > 3 ? "; …" : "")
            return [Check("database", .error, "\(path) is damaged (quick_check: \(shown))", fix: recover)]
        }
        let version = (try? database.queryOne("SELECT sqlite_version() AS version"))?.string("version") ?? "?"
        return [Check("database", .ok, "\(path): quick_check ok (SQLite \(version))"), lastRunCheck(database)]
    }

    static func lastRunCheck(_ database: Database) -> Check {
        let run: RunRecord?
        do { run = try JobHistory(database: database).runs(limit: 1).first } catch {
            return Check("last_run", .error, "the job table cannot be read",
                         fix: "open the state once with a writing command of this adapt version (e.g. adapt gc --dry-run after adapt enqueue) "
                             + "so its migrations run; if that fails, report the error it prints")
        }
        guard let run else { return Check("last_run", .ok, "no run yet") }
        let counts = run.counts.filter { $0.value > 0 }.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
        switch run.state {
        case "failed":
            return Check("last_run", .warning, "\(run.id) (\(run.kind)) failed: \(counts)",
                         fix: "adapt show \(run.id) names the step and its error; adapt retry \(run.id) runs its failed steps again")
        case "cancelled":
            return Check("last_run", .warning, "\(run.id) (\(run.kind)) was cancelled: \(counts)",
                         fix: "nothing to do unless it was not meant; the next night enqueues a new run")
        case "active":
            return Check("last_run", .ok, "\(run.id) (\(run.kind)) is unfinished: \(counts)")
        default:
            return Check("last_run", .ok, "\(run.id) (\(run.kind)) succeeded")
        }
    }
}
