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

    /// Creates the directory (0700, with any missing parent 0700) when it is not there.
    public func create() throws {
        do {
            try PrivateFiles.createDirectory(root)
        } catch {
            throw CoreError.fileUnwritable(path: root.path, reason: "cannot create the state directory")
        }
    }

    /// Creates the directory if needed and makes everything in it private (directories 0700, files 0600);
    /// returns how many paths were looser than that, so the caller can say so once.
    @discardableResult
    public func createPrivate() throws -> PrivateFiles.Tightening {
        try create()
        return PrivateFiles.tighten(root)
    }
}
