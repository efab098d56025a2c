import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import TestSupport

/// A fresh buffer on a manual clock: in a temporary state directory's SQLite database, or in a new database of
/// the test process's throwaway PostgreSQL cluster (`PostgresCluster.shared`). Blobs are files in the state
/// directory on both.
struct BufferFixture {
    let directory = TemporaryDirectory("replay-test")
    let clock = ManualClock()
    let store: ReplayStore
    /// The PostgreSQL database's connection string (nil on SQLite).
    let connectionString: String?

    init(_ backend: Backend = .sqlite) throws {
        try directory.state.create()
        switch backend {
        case .sqlite:
            connectionString = nil
            store = try ReplayStore(database: try Database(path: directory.state.database.path, durability: .normal), clock: clock)
        case .postgres:
            let target = try PostgresCluster.shared().makeDatabase()
            connectionString = target
            store = try ReplayStore(database: try PostgresConnection(target), clock: clock)
        }
    }

    var blobs: BlobStore { directory.state.blobs }

    /// JSONL of `count` prompt/completion lines, numbered from `from`.
    static func lines(_ count: Int, from: Int = 0, words: Int = 6) -> Data {
        let text = (from..<(from + count)).map { i in
            let completion = (0..<words).map { "w\($0)-\(i)" }.joined(separator: " ")
            return "{\"prompt\":\"question \(i)\",\"completion\":\"\(completion)\"}"
        }.joined(separator: "\n")
        return Data(text.utf8)
    }

    @discardableResult
    func importLines(_ count: Int, from: Int = 0, words: Int = 6, lineage: String = "mail") throws -> ImportReport {
        try store.importJSONL(Self.lines(count, from: from, words: words), lineage: lineage)
    }

    /// Everything stored, as comparable text (to prove that a refused import changed nothing).
    func snapshotOfTables() throws -> [String] {
        var out: [String] = []
        let keys = [("replay_lineages", "name"), ("replay_examples", "id"), ("replay_uses", "lineage, night, example_id"),
                    ("replay_imports", "id")]
        for (table, key) in keys {
            for row in try store.database.query("SELECT * FROM \(table) ORDER BY \(key)") {
                out.append(table + ": " + ["id", "name", "lineage", "split", "completion", "night", "example_id", "records"]
                    .map { row.string($0) ?? "-" }.joined(separator: "|"))
            }
        }
        return out
    }
}

let day: Int64 = 86_400_000
