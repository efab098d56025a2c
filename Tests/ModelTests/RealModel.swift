import Foundation
import Testing
@testable import Model

/// The default model, when `scripts/fetch-model` has put it into `state/models/`; tests that need it
/// are skipped (with this reason) when it is absent.
enum RealModel {
    static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("state/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    static let isPresent = FileManager.default.fileExists(atPath: path.path)
    static let absentReason: Comment = "the real model is absent; run scripts/fetch-model"

    /// The file's URL, or nil after printing why the calling test is skipped.
    static var url: URL? {
        if isPresent { return path }
        print("skipped: \(path.lastPathComponent) is absent; run scripts/fetch-model to fetch it")
        return nil
    }

    static func fixture(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    }

    /// Loaded once for all tests.
    static let tokenizer: Tokenizer? = {
        guard isPresent else { return nil }
        // Temporary until the GGUF reader lands: vocabulary extracted to a JSON file at test-prep time.
        guard let data = FileManager.default.contents(atPath: "/tmp/smollm_vocab.json"),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return try? Tokenizer(tokens: object["tokens"] as! [String], merges: object["merges"] as! [String],
                              tokenTypes: object["token_type"] as! [Int], preTokenizer: object["pre"] as! String,
                              bos: object["bos_token_id"] as? Int, eos: object["eos_token_id"] as? Int,
                              addBOS: object["add_bos_token"] as? Bool ?? false)
    }()
}
