import AdaptCore
import Adapters
import Foundation
import Registry
#if canImport(Glibc)
import Glibc
#endif

/// The active exports follow the committed active pointer: a command that moved the pointer brings the lineage's
/// export along after its commit (`follow`), and whatever a failed commit or a kill between the commit and the
/// export left behind is found (`mismatches`: `adapt doctor`) and put right (`repair`: `adapt work` as it starts).
///
/// The export is derived data: the pointer decides, the export is written from it, never the other way round.
public enum ActiveExportSync {
    /// A lineage whose export does not serve its active version (or serves one though the base model is active).
    public struct Mismatch: Sendable, Equatable {
        public let lineage: String
        /// The active version's name (`v3`); nil when the lineage uses the base model.
        public let active: String?
        /// What is wrong, in a sentence.
        public let problem: String
    }

    /// What bringing one lineage's export to its active version did.
    public struct Result: Sendable, Equatable {
        public let lineage: String
        /// The version the export now holds; nil when the lineage uses the base model (the export is removed).
        public let active: String?
        /// How to serve it, one line each (empty when the export failed).
        public let lines: [String]
        /// Why the export could not be written or removed; nil when it was.
        public let failure: String?
    }

    /// Writes `lineage`'s export from the version the registry has active now (or removes it for the base model).
    /// Called after the commit that moved the pointer; a failure is reported, not thrown: the move stands, and
    /// the next `adapt work` start (or `adapt doctor`'s advice) repairs the export.
    ///
    /// The pointer is read and the export written under an exclusive lock on `exports/`: of two commands that
    /// moved the pointer one after the other, whichever writes last has read the later pointer.
    public static func follow(lineage: ShortIdentifier, registry: AdapterRegistry, model: URL, state: StateDirectory) -> Result {
        var active: String?
        do {
            return try holdingExportsLock(state) {
                active = try registry.active(lineage: lineage)?.name
                let model = active == nil ? try lineageBase(lineage, registry: registry, preferred: model, state: state) : model
                let lines = try ActiveAdapterExport.update(lineage: lineage, registry: registry, model: model, state: state)
                return Result(lineage: lineage.value, active: active, lines: lines, failure: nil)
            }
        } catch {
            return Result(lineage: lineage.value, active: active, lines: [], failure: "\(error)")
        }
    }

    /// Runs `body` holding flock(2) on the `exports/` directory (released by the kernel if the process dies).
    static func holdingExportsLock<T>(_ state: StateDirectory, _ body: () throws -> T) throws -> T {
        let directory = state.root.appendingPathComponent("exports")
        do { try PrivateFiles.createDirectory(directory) } catch {
            throw AdapterExchangeError.io("cannot create \(directory.path); check the state directory's permissions")
        }
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw AdapterExchangeError.io("cannot open \(directory.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw AdapterExchangeError.io("cannot lock \(directory.path): \(String(cString: strerror(errno)))") }
        }
        return try body()
    }

    /// The base model a lineage falls back to: the GGUF in models/ its newest version was trained on, so that the
    /// "serve the base model" line names the lineage's own model; `preferred` when none is found there.
    static func lineageBase(_ lineage: ShortIdentifier, registry: AdapterRegistry, preferred: URL, state: StateDirectory) throws -> URL {
        guard let digest = try registry.versions(lineage: lineage).last?.metadata.baseModel,
              let (url, _) = try? ActiveAdapterExport.baseModel(digest, preferred: preferred, state: state) else { return preferred }
        return url
    }

    /// Every lineage whose export differs from the committed pointer: a lineage of the registry, or a directory in
    /// `exports/`. Reads only.
    public static func mismatches(registry: AdapterRegistry, state: StateDirectory) throws -> [Mismatch] {
        try lineages(registry: registry, state: state).compactMap { lineage in
            let directory = ActiveAdapterExport.directory(lineage: lineage.value, state: state)
            let files = ["active.gguf", "Modelfile"].filter {
                FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path)
            }
            let recorded = ActiveExportRecord.read(in: directory)
            guard let active = try registry.active(lineage: lineage) else {
                guard !files.isEmpty || recorded != nil else { return nil }
                return Mismatch(lineage: lineage.value, active: nil,
                                problem: "\(lineage) uses the base model, but its export still serves an adapter")
            }
            if files.count < 2 {
                return Mismatch(lineage: lineage.value, active: active.name,
                                problem: "\(lineage)/\(active.name) is active, but its export is missing")
            }
            guard recorded == active.adapterDigest else {
                return Mismatch(lineage: lineage.value, active: active.name,
                                problem: "\(lineage)/\(active.name) is active, but its export holds "
                                    + (recorded == nil ? "an adapter it does not name" : "another adapter"))
            }
            return nil
        }
    }

    /// Rewrites (or removes) every export that `mismatches` finds; exports already in line are not touched.
    public static func repair(registry: AdapterRegistry, model: URL, state: StateDirectory) throws -> [Result] {
        try mismatches(registry: registry, state: state).compactMap { mismatch in
            ShortIdentifier(mismatch.lineage).map { follow(lineage: $0, registry: registry, model: model, state: state) }
        }
    }

    /// The registry's lineages with those that have an export directory, sorted, each once.
    static func lineages(registry: AdapterRegistry, state: StateDirectory) throws -> [ShortIdentifier] {
        let exports = state.root.appendingPathComponent("exports")
        let directories = ((try? FileManager.default.contentsOfDirectory(atPath: exports.path)) ?? []).compactMap { ShortIdentifier($0) }
        let all = Set(try registry.lineages().map(\.value) + directories.map(\.value))
        return all.sorted().compactMap { ShortIdentifier($0) }
    }
}
