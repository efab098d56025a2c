import AdaptCore
import Foundation

/// The default model in this checkout's `state/models/`, where `scripts/fetch-model` puts it; `scripts/test`
/// refuses to run without it, so the tests that need it are disabled only in hand-run partial builds.
public enum CheckoutModel {
    public static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("state/models").appendingPathComponent(DefaultModel.fileName)

    public static var isPresent: Bool { FileManager.default.fileExists(atPath: url.path) }
}
