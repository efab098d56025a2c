import Foundation
import Model
import Testing
import TestSupport

/// The default model, when it has been fetched (scripts/fetch-model); tests that need it are disabled otherwise, with the reason.
enum RealModel {
    static let path = CheckoutModel.url

    /// For `@Test(.enabled(if: RealModel.isPresent, RealModel.absentReason))`.
    static let isPresent = FileManager.default.fileExists(atPath: path.path)
    static let absentReason: Comment = "the real model is absent; run scripts/fetch-model to fetch it"

    /// The real model's tokenizer, read once for all tests.
    static let tokenizer: Tokenizer? = {
        guard isPresent, let file = try? GGUFFile(url: path) else { return nil }
        return try? Tokenizer(gguf: file)
    }()

    /// The real model's chat template text.
    static let chatTemplate: String? = {
        guard isPresent, let file = try? GGUFFile(url: path) else { return nil }
        return file.string("tokenizer.chat_template")
    }()

    /// A committed fixture of this test target.
    static func fixture(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    }
}

extension RealModel {
    /// The default model loaded once per test run; only tests enabled by `isPresent` touch it.
    static let model: LlamaModel = try! LlamaModel(url: path)
}
