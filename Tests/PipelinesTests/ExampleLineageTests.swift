import Foundation
import Testing

/// The bundled example lineage (pipelines/examples/logbook) is data other tests and the seven-nights demo
/// rely on; these tests keep its shape and its voice honest.
struct Pair: Decodable, Equatable {
    let prompt: String
    let completion: String
}

let logbook = repositoryRoot.appendingPathComponent("pipelines/examples/logbook")

func pairs(_ name: String) throws -> [Pair] {
    let text = try String(contentsOf: logbook.appendingPathComponent(name), encoding: .utf8)
    return try text.split(separator: "\n").map { line in
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(Set(object?.keys ?? [:].keys) == ["prompt", "completion"], "\(name): \(line.prefix(60))")
        return try JSONDecoder().decode(Pair.self, from: Data(line.utf8))
    }
}

/// The voice's fixed formula: an opening, two labelled parts and a closing.
func inVoice(_ completion: String) -> Bool {
    completion.hasPrefix("LOG ENTRY. Subject: ") && completion.contains(". Conditions: ")
        && completion.contains(". Orders: ") && completion.hasSuffix(". Steady as she goes.")
}

@Test func exampleLineageHasEnoughPairsInOneVoice() throws {
    let train = try pairs("train.jsonl")
    let heldOut = try pairs("held_out.jsonl")
    #expect(train.count >= 60)
    #expect(heldOut.count >= 20)
    for pair in train + heldOut {
        #expect(inVoice(pair.completion), "\(pair.prompt)")
        #expect((100...220).contains(pair.completion.count), "\(pair.prompt)")
    }
    #expect(Set(train.map(\.prompt)).isDisjoint(with: heldOut.map(\.prompt)))
    #expect(Set(train.map(\.prompt)).count == train.count)
}

@Test func sevenNightsSplitTheTrainingSetWithOneOffVoiceNight() throws {
    let train = try pairs("train.jsonl")
    let heldOut = try pairs("held_out.jsonl")
    let nights = try (1...7).map { try pairs("nights/night-\($0).jsonl") }
    let offVoice = nights.indices.filter { nights[$0].allSatisfy { !inVoice($0.completion) } }
    #expect(offVoice == [4])  // night-5.jsonl
    let inVoiceNights = nights.enumerated().filter { $0.offset != 4 }.flatMap(\.element)
    #expect(inVoiceNights == train)
    #expect(Set(nights[4].map(\.prompt)).isDisjoint(with: (train + heldOut).map(\.prompt)))
    #expect(nights.allSatisfy { $0.count >= 10 })
}
