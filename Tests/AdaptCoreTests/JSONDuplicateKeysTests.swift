import AdaptCore
import Foundation
import Testing

@Test func aRepeatedKeyIsFoundWithItsLineAndObjectPath() throws {
    let text = """
        {"train": {"steps": 10,
                   "learning_rate": 0.001,
                   "learning_rate": 0.1},
         "seed": 1}
        """
    let duplicate = try #require(JSONDuplicateKeys.first(in: Data(text.utf8)))
    #expect(duplicate.key == "learning_rate")
    #expect(duplicate.line == 3)
    #expect(duplicate.path == "$.train")
    #expect(duplicate.description.contains(#"key "learning_rate" appears twice in one object at line 3 (in $.train)"#))
}

@Test func keysAreComparedAfterDecodingTheirEscapes() throws {
    let duplicate = try #require(JSONDuplicateKeys.first(in: Data(#"{"steps": [{"a": 1}, {"name": 1, "n\u0061me": 2}]}"#.utf8)))
    #expect(duplicate.key == "name")
    #expect(duplicate.path == "$.steps[1]")
}

@Test(arguments: [
    #"{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]}"#,  // the same key in different objects
    #"{"a": "a", "b": ["a", "a"], "c": "\"a\": 1, \"a\": 2"}"#,  // values and strings that look like keys
    #"[{"x": 1}, {"x": 2}]"#,
    #""just a string""#,
    "{}",
])
func distinctKeysInEachObjectPass(text: String) throws {
    #expect(JSONDuplicateKeys.first(in: Data(text.utf8)) == nil)
    _ = try JSON.decode(JSONValue.self, from: text, context: "test")
}

@Test func jsonDecodeRefusesADuplicateKeyNamingTheContext() {
    #expect {
        _ = try JSON.decode(JSONValue.self, from: "{\"kind\": \"noop\",\n\"kind\": \"other\"}", context: "run.json")
    } throws: { error in
        let text = "\(error)"
        return text.contains("run.json") && text.contains(#"key "kind" appears twice"#) && text.contains("line 2")
    }
}
