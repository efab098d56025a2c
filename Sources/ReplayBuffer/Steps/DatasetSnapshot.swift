import AdaptCore
import Foundation

/// One line of a dataset snapshot: what the train and eval steps read.
public struct SnapshotExample: Sendable, Equatable, Codable {
    public let id: String
    public let system: String?
    public let prompt: String
    public let completion: String
    public let weight: Double
    public let tokens: Int
    /// Every turn of a conversation of more than one exchange, in order; absent for a single exchange (whose
    /// line encodes byte for byte as before conversations were kept whole, so recorded digests still hold).
    public let turns: [Turn]?

    public init(id: String, system: String?, prompt: String, completion: String, weight: Double, tokens: Int,
                turns: [Turn]? = nil) {
        self.id = id
        self.system = system
        self.prompt = prompt
        self.completion = completion
        self.weight = weight
        self.tokens = tokens
        self.turns = turns
    }

    /// The whole conversation: the turns, or the single exchange's.
    public var conversation: [Turn] {
        turns ?? Conversation.turns(system: system, prompt: prompt, completion: completion)
    }
}

/// A dataset snapshot blob: JSONL, one canonical JSON object (sorted keys, no spaces) per line, each ending
/// in a newline. It is a local blob, named by its SHA-256, and never leaves the machine.
public enum DatasetSnapshot {
    public static func encode(_ examples: [SnapshotExample]) -> Data {
        var data = Data()
        for example in examples {
            data.append(JSON.canonical(example))
            data.append(0x0A)
        }
        return data
    }

    /// Reads and verifies a snapshot from `blobs`.
    public static func load(_ digest: Digest, from blobs: any BlobStorage) throws -> [SnapshotExample] {
        let data = try blobs.get(digest)
        return try data.split(separator: 0x0A).enumerated().map { index, line in
            try JSON.decode(SnapshotExample.self, from: Data(line), context: "snapshot \(digest.short) line \(index + 1)")
        }
    }

    static func line(_ example: Example) -> SnapshotExample {
        SnapshotExample(id: example.id, system: example.system, prompt: example.prompt, completion: example.completion,
                        weight: example.weight, tokens: example.tokenCount, turns: example.turns)
    }
}
