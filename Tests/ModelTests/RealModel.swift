import Foundation
import Model

/// The default model, when it has been fetched (scripts/fetch-model); tests that need it skip otherwise.
enum RealModel {
    static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("state/models/SmolLM2-135M-Instruct.Q4_1.gguf")

    /// The file's URL, or nil after printing why the calling test is skipped.
    static var url: URL? {
        if FileManager.default.fileExists(atPath: path.path) { return path }
        print("skipped: \(path.lastPathComponent) is absent; run scripts/fetch-model to fetch it")
        return nil
    }
}
