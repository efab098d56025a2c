import AdaptCore
import Foundation
import ReplayBuffer
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// A replay scratch directory the user keeps (`adapt replay RUN --scratch DIR`): it holds a copy of the run's
/// replay buffer, outside the state, so erasure has to know where it is.
///
/// Each kept scratch is recorded before the replay writes into it, one file per scratch in
/// `<state>/scratch/kept/`, and marked with a random token in `DIR/.adapt-replay-scratch`. `data forget` and the
/// prune step's expiry then remove every recorded scratch that holds a copy of an erased snapshot (its blob store
/// has a digest the database records as erased), and `data forget` names, without touching, one that is gone or
/// whose token is not the recorded one (moved, or replaced by something else): a copy that was moved cannot be
/// found, and a directory that is no longer ours is not deleted.
public enum KeptReplayScratch {
    /// The marker file inside a kept scratch.
    public static let markerName = ".adapt-replay-scratch"

    /// What a record file holds.
    struct Record: Codable {
        let path: String
        let runID: String
        let token: String
        let keptAt: Int64

        enum CodingKeys: String, CodingKey { case path, token, runID = "run_id", keptAt = "kept_at" }
    }

    /// What erasure did about one recorded scratch.
    public struct Outcome: Sendable, Equatable {
        public enum Action: String, Sendable {
            /// It held a copy of erased text and was deleted.
            case removed
            /// Nothing is at its path any more: if it was moved, the copy is wherever it went.
            case notFound = "not_found"
            /// Its path holds something else (another directory, a link, a file): left alone.
            case notOurs = "not_ours"
            /// It held a copy but could not be deleted; it stays recorded and the next erasure tries again.
            case notRemoved = "not_removed"
        }

        public let path: String
        public let runID: String
        public let action: Action
        /// For `notRemoved`, why.
        public let reason: String?
    }

    /// `<state>/scratch/kept`.
    static func records(of state: StateDirectory) -> URL { ReplayScratch.parent(of: state).appendingPathComponent("kept") }

    /// Records `scratch` as kept for `run` and marks it (creating it private when missing). Call it before the
    /// replay writes anything there, so that a replay killed half-way leaves a scratch erasure still reaches.
    public static func record(_ scratch: URL, run: String, in state: StateDirectory, clock: any Clock = SystemClock()) throws {
        let directory = scratch.standardizedFileURL
        try PrivateFiles.createDirectory(directory)  // with its missing parents, as the replay would
        try ReplayScratch.makePrivateDirectory(directory)
        let token = UUID().uuidString.lowercased()
        let record = Record(path: directory.path, runID: run, token: token, keptAt: clock.nowMilliseconds())
        try AtomicFile.write(JSON.canonical(record), to: records(of: state).appendingPathComponent("\(token).json"))
        try AtomicFile.write(Data(token.utf8), to: directory.appendingPathComponent(markerName))
    }

    /// After an erasure or an expiry: removes each kept scratch whose blob store holds a blob `database` (the
    /// state's, or the PostgreSQL database the runs are in) records as erased, that is a snapshot that held erased
    /// or expired text. With `nameUnreachable`, each one that is gone or no longer ours is named and no longer
    /// recorded (`data forget` says so); without, it is left recorded for the next `data forget` to name (the
    /// prune step has no one to tell). A scratch holding no erased blob is left as it is. In path order.
    public static func erase(in state: StateDirectory, database: any SQLConnection, nameUnreachable: Bool = true) -> [Outcome] {
        let folder = records(of: state)
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }
        var outcomes: [Outcome] = []
        for name in files {
            let file = folder.appendingPathComponent(name)
            guard let data = try? AtomicFile.read(file), let record = try? JSON.decode(Record.self, from: data, context: name) else { continue }
            let scratch = URL(fileURLWithPath: record.path)
            func outcome(_ action: Outcome.Action, _ reason: String? = nil) -> Outcome {
                Outcome(path: record.path, runID: record.runID, action: action, reason: reason)
            }
            let found = place(scratch, token: record.token)
            switch found {
            case .missing, .other:
                guard nameUnreachable else { continue }
                outcomes.append(outcome(found == .missing ? .notFound : .notOurs))
                try? FileManager.default.removeItem(at: file)
            case .ours:
                do {
                    let erased = try ReplayStore.erasures(of: blobDigests(in: scratch), in: database)
                    guard !erased.isEmpty else { continue }
                    try FileManager.default.removeItem(at: scratch)
                    try? FileManager.default.removeItem(at: file)
                    outcomes.append(outcome(.removed))
                } catch {
                    outcomes.append(outcome(.notRemoved, "\(error)"))
                }
            }
        }
        return outcomes.sorted { $0.path < $1.path }
    }

    /// The digests of the blob files a scratch state holds (`blobs/<2 hex>/<64 hex>`).
    static func blobDigests(in scratch: URL) -> [Digest] {
        let root = StateDirectory(root: scratch).blobs.root
        let shards = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return shards.flatMap { shard in
            ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(shard).path)) ?? []).compactMap(Digest.init(hex:))
        }
    }

    enum Place { case missing, other, ours }

    /// Whether `scratch` is still the directory that was recorded: a real directory (not a link) whose marker
    /// holds `token`.
    static func place(_ scratch: URL, token: String) -> Place {
        var status = stat()
        guard lstat(scratch.path, &status) == 0 else { return .missing }
        guard status.st_mode & S_IFMT == S_IFDIR,
              let marker = try? AtomicFile.read(scratch.appendingPathComponent(markerName)),
              String(decoding: marker, as: UTF8.self) == token else { return .other }
        return .ours
    }
}
