import Foundation
import Testing
@testable import Training

@Suite struct TrainingExampleTests {
    @Test func readsJSONLinesWithOptionalWeights() throws {
        let text = """
            {"prompt": "Hi", "completion": "Hello!"}

            {"prompt": "", "completion": "x", "weight": 2.5, "source": "mail"}
            """
        let examples = try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl")
        #expect(examples == [TrainingExample(prompt: "Hi", completion: "Hello!"), TrainingExample(prompt: "", completion: "x", weight: 2.5)])
    }

    @Test func namesTheLineAndFieldButNeverTheText() {
        let text = "{\"prompt\": \"secret words\", \"completion\": \"ok\"}\n{\"prompt\": \"secret words\"}\n"
        #expect(throws: TrainingError.invalidDataset(file: "d.jsonl", line: 2, reason: "missing field \"completion\"")) {
            try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl")
        }
        let negative = "{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": -1}"
        let error = thrown { try TrainingExample.parseJSONLines(Data(negative.utf8), name: "d.jsonl") }
        #expect(error.map { "\($0)" }?.contains("line 1: weight must be 0 (skip the example) or between") == true)
        let garbage = "secret words"
        #expect(thrown { try TrainingExample.parseJSONLines(Data(garbage.utf8), name: "d.jsonl") }.map { "\($0)".contains("secret") } == false)
    }

    @Test func aRepeatedKeyIsRefusedNamingTheLine() {
        let text = "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\", \"prompt\": \"c\", \"completion\": \"b\"}\n"
        let error = thrown { try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl") }
        #expect(error.map { "\($0)" }?.contains(#"line 2: key "prompt" appears twice in one object (in $)"#) == true, "\(String(describing: error))")
    }

    /// Weights valid as Double but not usable as an f32 loss factor: 1e300 becomes infinity, 1e-50 becomes 0,
    /// 3e38 overflows the summed loss.
    @Test(arguments: ["1e300", "1e-50", "3e38", "1e7", "9e-7", "-0.5"])
    func refusesAWeightOutsideTheRangeNamingFileLineAndRange(weight: String) {
        let text = "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": \(weight)}\n"
        let error = thrown { try TrainingExample.parseJSONLines(Data(text.utf8), name: "d.jsonl") }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("d.jsonl line 2: weight must be 0 (skip the example) or between 1e-06 and 1000000.0"), "\(message)")
    }

    @Test func acceptsZeroAndWeightsInsideTheRange() throws {
        let lines = ["0", "1e-6", "0.5", "1e6"].map { "{\"prompt\": \"a\", \"completion\": \"b\", \"weight\": \($0)}" }
        let examples = try TrainingExample.parseJSONLines(Data(lines.joined(separator: "\n").utf8), name: "d.jsonl")
        #expect(examples.map(\.weight) == [0, 1e-6, 0.5, 1e6])
        #expect(TrainingExample.isValidWeight(1) && !TrainingExample.isValidWeight(.nan) && !TrainingExample.isValidWeight(.infinity))
    }
}
