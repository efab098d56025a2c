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
        #expect(error.map { "\($0)" }?.contains("line 1: weight must be a non-negative number") == true)
        let garbage = "secret words"
        #expect(thrown { try TrainingExample.parseJSONLines(Data(garbage.utf8), name: "d.jsonl") }.map { "\($0)".contains("secret") } == false)
    }
}
