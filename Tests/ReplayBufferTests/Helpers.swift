import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import TestSupport

/// A fresh buffer in a temporary state directory, on a manual clock.
struct BufferFixture {
    let directory = TemporaryDirectory("replay-test")
    let clock = ManualClock()
    let store: ReplayStore

    init() throws {
        try directory.state.create()
        store = try ReplayStore(database: try Database(path: directory.state.database.path, durability: .normal), clock: clock)
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
        for table in ["replay_lineages", "replay_examples", "replay_uses", "replay_imports"] {
            for row in try store.database.query("SELECT * FROM \(table) ORDER BY rowid") {
                out.append(table + ": " + ["id", "name", "lineage", "split", "completion", "night", "example_id", "records"]
                    .map { row.string($0) ?? "-" }.joined(separator: "|"))
            }
        }
        return out
    }
}

let day: Int64 = 86_400_000
