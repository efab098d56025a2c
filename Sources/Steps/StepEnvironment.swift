import AdaptCore
import Foundation
import Pipelines
import Storage

/// What a step body works with: a state directory, one database connection, a blob store, a clock, and where
/// device readings come from.
///
/// A worker process builds one and shares its connection between the job engine, the replay buffer and the
/// registry, so a completion hook's registry writes commit in the job engine's transaction (DESIGN.md: "a
/// step's completion … and (for promote) the registry pointer flip commit in one transaction").
///
/// On SQLite the state directory holds all of it. On PostgreSQL the connection is the server's and the blobs
/// (snapshots, checkpoints, adapters) are rows of it, so hosts share nothing else; the state directory is then
/// the host's own: its models, its exports, its scratch.
public struct StepEnvironment: Sendable {
    public let state: StateDirectory
    public let database: any SQLConnection
    public let blobs: any BlobStorage
    public let clock: any Clock
    /// The root under which `/sys/class/...` and `/proc/meminfo` are read: `/` on a real machine, a fake tree
    /// in tests (`ADAPT_SYSFS_ROOT`).
    public let deviceRoot: URL
    /// One line per notable thing a step did (stderr in the worker executables).
    public let log: @Sendable (String) -> Void

    /// The environment variable that points device readings at another root.
    public static let deviceRootVariable = "ADAPT_SYSFS_ROOT"

    /// Everything in `state`: its SQLite database and its blob files.
    public init(state: StateDirectory, database: Database, clock: any Clock = SystemClock(),
                deviceRoot: URL = URL(fileURLWithPath: "/"), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.init(state: state, connection: database, blobs: state.blobs, clock: clock, deviceRoot: deviceRoot, log: log)
    }

    /// Rows and blobs wherever `connection` and `blobs` keep them; `state` for the models, exports and scratch.
    public init(state: StateDirectory, connection: any SQLConnection, blobs: any BlobStorage, clock: any Clock = SystemClock(),
                deviceRoot: URL = URL(fileURLWithPath: "/"), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.state = state
        self.database = connection
        self.blobs = blobs
        self.clock = clock
        self.deviceRoot = deviceRoot
        self.log = log
    }

    /// The device root the environment names, or `/`.
    public static func deviceRoot(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        guard let path = environment[deviceRootVariable], !path.isEmpty else { return URL(fileURLWithPath: "/") }
        return URL(fileURLWithPath: path)
    }

    public func deviceReadings() -> DeviceReadings { DeviceReadings.read(root: deviceRoot) }

    /// The base model's file: `name` itself when it is a path to a file, else `name` in the state's models/.
    /// An empty name, or one that names a directory (models/ itself), is not found: neither is a model.
    public func modelURL(_ name: String) throws -> URL { try Self.modelURL(name, in: state) }

    /// `modelURL` for `state`, before any database is opened (a command refused for a missing model creates no state).
    public static func modelURL(_ name: String, in state: StateDirectory) throws -> URL {
        func isFile(_ path: String) -> Bool {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        guard !name.isEmpty else { throw StepError.modelNotFound(name: name) }
        if name.contains("/"), isFile(name) { return URL(fileURLWithPath: name) }
        for candidate in [name, name + ".gguf"] {
            let url = state.models.appendingPathComponent(candidate)
            if isFile(url.path) { return url }
        }
        throw StepError.modelNotFound(name: name)
    }
}
