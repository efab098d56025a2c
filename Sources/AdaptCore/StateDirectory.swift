import Foundation

/// The folder that holds one installation's database, blobs and models (DESIGN.md: `state/`).
public struct StateDirectory: Sendable {
    public let root: URL

    public init(root: URL) { self.root = root.standardizedFileURL }

    /// `--state DIR` wins, then `ADAPT_STATE`, then `./state`.
    public static func resolve(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> StateDirectory {
        let path = option ?? environment["ADAPT_STATE"].flatMap { $0.isEmpty ? nil : $0 } ?? "state"
        return StateDirectory(root: URL(fileURLWithPath: path))
    }

    public var database: URL { root.appendingPathComponent("adapt.sqlite") }
    public var blobs: BlobStore { BlobStore(root: root.appendingPathComponent("blobs")) }
    public var models: URL { root.appendingPathComponent("models") }

    public func create() throws {
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw CoreError.fileUnwritable(path: root.path, reason: "cannot create the state directory")
        }
    }
}
