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

    /// Creates the directory if needed and makes what the engine keeps in it private (directories 0700, files
    /// 0600); returns how many paths were looser than that, so the caller can say so once. A directory that is
    /// not a state (`requireOwnOrEmpty`) is refused before anything is created or changed.
    @discardableResult
    public func createPrivate() throws -> PrivateFiles.Tightening {
        try requireOwnOrEmpty()
        try create()
        return tightenOwnEntries()
    }

    /// Makes the directory itself and the entries the engine made in it private, and nothing else in it.
    @discardableResult
    public func tightenOwnEntries() -> PrivateFiles.Tightening {
        PrivateFiles.tighten(root, onlyEntries: Self.engineEntries)
    }

    /// What the engine puts directly in a state directory, and what a fresh checkout's `state/` holds before the
    /// first run (its README and `models/`).
    public static let engineEntries: Set<String> = [
        "adapt.sqlite", "adapt.sqlite-wal", "adapt.sqlite-shm", "adapt.sqlite-journal",
        "blobs", "models", "scratch", "exports", "work.lock", "README.md",
    ]

    /// Refuses a state directory that does not exist (`MissingStateError`), creating nothing: a mistyped --state
    /// given to a command that needs a state something else made (`adapt worker`, `adapt work`, the step
    /// executables, the commands that only read or change what is stored). Nothing is checked inside it.
    public func requireDirectory() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MissingStateError(path: root.path, missing: "directory")
        }
    }

    /// Refuses an existing directory that is not a state: one without the engine's database that holds
    /// anything the engine does not make (a home folder, a project). A missing or empty directory, or one
    /// holding only the engine's entries, is fine. Nothing is changed either way.
    public func requireOwnOrEmpty() throws {
        var status = stat()
        guard stat(root.path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return }
        guard !FileManager.default.fileExists(atPath: database.path) else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        let strangers = names.filter { !Self.engineEntries.contains($0) }.sorted()
        if !strangers.isEmpty { throw ForeignDirectoryError(path: root.path, strangers: strangers) }
    }
}
