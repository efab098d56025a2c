import Foundation
import ReplayBuffer

/// Import lines (`adapt data import`): every line becomes a record or a problem naming its line.
public enum JSONLFuzz: FuzzTarget {
    public static let name = "jsonl"

    public static func run(_ data: Data) {
        let (records, problems) = JSONLReader(maxRecordBytes: 4096).read(data)
        for problem in problems where problem.line < 1 { FuzzFinding.fail(name, "a problem on line \(problem.line)") }
        for record in records where record.line < 1 { FuzzFinding.fail(name, "a record on line \(record.line)") }
    }

    public static func seeds() throws -> [Data] {
        try FuzzFixtures.lines("Tests/ReplayBufferTests/Fixtures/clean.jsonl", count: 6)
            + FuzzFixtures.lines("Tests/ReplayBufferTests/Fixtures/pii.jsonl", count: 4)
            + FuzzFixtures.lines("pipelines/examples/logbook/train.jsonl", count: 4)
            + [
                Data(#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}], "weight": 2, "source": "x"}"#.utf8),
                Data("\u{FEFF}{\"text\": \"t\"}\r\n\n{\"prompt\": \"p\", \"completion\": \"c\"}\n".utf8),
            ]
    }
}
