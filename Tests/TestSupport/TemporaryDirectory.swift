import AdaptCore
import Foundation

/// A fresh directory under the system's temporary folder, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {  // immutable after init
    public let url: URL

    public init(_ label: String = "adapt-test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public var path: String { url.path }
    public var state: StateDirectory { StateDirectory(root: url.appendingPathComponent("state")) }
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}
