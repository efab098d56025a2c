import AdaptCore
import Foundation
import JobQueue
import Steps
import Storage

/// `adapt run export` and `adapt replay --bundle`: a recorded run carried to a machine with no state directory
/// (a CI job) and replayed there.
public enum RunBundles {
    public typealias Report = RunReplay.Report

    /// Writes the bundle of `run` to `out` (atomically, mode 0600); returns it with its size in bytes.
    public static func export(_ run: RunID, from runs: RecordedRuns, includeUserData: Bool,
                              to out: URL) throws -> (bundle: RunBundle, bytes: Int) {
        guard try runs.queue.runExists(run) else { throw JobQueueError.unknownRun(run) }
        let bundle = try RunBundle.export(run, queue: runs.queue, connection: runs.connection, blobs: runs.blobs,
                                          includeUserData: includeUserData)
        let data = try bundle.encoded()
        try AtomicFile.write(data, to: out)
        return (bundle, data.count)
    }

    /// The bundle in `data` (read from `path`), or `RunBundleError` when it is damaged or of another format.
    public static func decode(_ data: Data, path: String) throws -> RunBundle {
        try RunBundle.decode(data, path: path)
    }

    /// A private scratch directory for one replay under `parent` (made when missing).
    public static func scratch(under parent: URL) throws -> URL {
        try ReplayScratch.make(under: parent)
    }

    /// The OpenBLAS core type `bundle` was recorded with, when it is all that differs from this process's and
    /// this CPU runs it: executed again pinned to it, the replay can match bit for bit.
    public static func coreTypeToPin(_ bundle: RunBundle) -> String? {
        RunReplay.coreTypeToPin(manifest: bundle.manifest, steps: bundle.steps)
    }

    /// Executes this process again (same pid and arguments) with OpenBLAS pinned to `coreType`; returns only
    /// when that cannot be done, and the replay then goes on under this process's kernels.
    public static func executeAgain(pinning coreType: String) {
        _ = StepProcess.reexecute(pinning: coreType)
    }

    /// Replays `bundle` in `scratch` with the base model at `model` (whose SHA-256 must be the bundle's),
    /// comparing by bits or, from the first step recorded under other arithmetic, within a tolerance.
    public static func replay(_ bundle: RunBundle, model: URL, scratch: StateDirectory, comparison: ReplayComparison,
                              log: @escaping @Sendable (String) -> Void) throws -> Report {
        try bundle.replay(model: model, scratch: scratch, comparison: comparison, log: log)
    }
}
