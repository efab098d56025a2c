import AdaptCore
import Pipelines
import Storage

extension RecordedRun {
    /// Every blob a recorded run of the job table reads again when replayed (`inputBlobs`: buffer snapshots, the
    /// sample step's weights parent, the eval step's incumbent adapter, the adapter active before a promote step), over the runs `connection` still
    /// holds. `adapt registry prune` keeps the adapters among them: deleting one would make its run unreplayable.
    public static func blobsReadOnReplay(in connection: any SQLConnection) throws -> Set<Digest> {
        guard try jobTableExists(connection) else { return [] }
        let rows = try connection.query(
            "SELECT id, name, kind, input, output FROM jobs WHERE state = 'succeeded' AND kind IN (?, ?, ?, ?) AND output IS NOT NULL",
            StepKind.prune.rawValue, StepKind.sample.rawValue, StepKind.eval.rawValue, StepKind.promote.rawValue)
        var found = Set<Digest>()
        for row in rows {
            guard let id = row.int64("id"), let kind = row.string("kind"), let text = row.string("output") else { continue }
            let output = try JSON.decode(JSONValue.self, from: text, context: "the output of job \(id)")
            let step = Step(id: id, name: row.string("name") ?? kind, kind: kind, input: .null, output: output, ancestors: [:])
            for (_, digest) in try inputBlobs(of: step) { found.insert(digest) }
        }
        return found
    }

    /// A state that only registered adapters (`registry add`) has no job table, and so no recorded run.
    private static func jobTableExists(_ connection: any SQLConnection) throws -> Bool {
        switch connection.dialect {
        case .postgres: return try connection.scalar("SELECT to_regclass('jobs') IS NOT NULL").integerValue == 1
        case .sqlite: return try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'jobs'").integerValue == 1
        }
    }
}
