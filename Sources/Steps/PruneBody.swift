import AdaptCore
import AdapterExchange
import Pipelines
import Registry
import ReplayBuffer
import Storage

/// The prune step: snapshot the lineage's replay buffer, then delete what has outlived its TTL.
///
/// The snapshot (a `LineageDump` blob, `inputs.buffer_snapshot`) is the run's record of the data it started
/// from: replay restores it into a scratch state directory and re-runs every step from there.
///
/// TTL: the lineage's stored TTL sets each example's `expires_at`; the pipeline's `ttl_days` can only make it
/// shorter. With a pipeline TTL of P days under a lineage TTL of L days, an example is deleted when
/// `expires_at ≤ now + (L − P) days`, i.e. when it is older than P days. Only training examples expire: the
/// held-out set is pinned to the lineage and only grows (DESIGN.md). The clock reading is part of the
/// result, and replay reuses it, so the same buffer prunes the same examples.
///
/// Adapters: the versions trained on an expired example (through their `trained_from` chain) are listed in the
/// output's `registry` section and an event, and retired in the completion when the pipeline sets
/// `ttl_retires_adapters` (`ExpiredAdapters`); the active export follows a pointer that moved.
///
/// Fencing: the body only measures what to delete (a rolled-back rehearsal, read together with the snapshot);
/// the deletion runs in `finalize`, inside the job's fenced completion transaction, and must delete exactly
/// what was measured. A worker that lost its lease deletes nothing; a buffer that changed in between makes
/// the completion fail, and the step runs again on the new buffer.
public enum PruneBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let parameters = try PlannedInput.parameters(PruneParameters.self, from: context.input)
        let store = try ReplayStore(database: environment.database, clock: environment.clock)
        let now = try context.recordedOutput(PruneOutput.self)?.now ?? environment.clock.nowMilliseconds()
        let registry = try AdapterRegistry(connection: environment.database, blobs: environment.blobs, clock: environment.clock)
        let retire = parameters.ttlRetiresAdapters

        let (dump, report, adapters, effectiveTTL) = try environment.database.transaction {
            let dump = try store.dump(lineage: common.lineage)
            let lineageTTL = dump.policy.ttlDays
            let effectiveTTL = min(lineageTTL, parameters.ttlDays)
            let shifted = now + Int64(lineageTTL - effectiveTTL) * 86_400_000
            let (report, adapters) = try PruneStep.plan(store: store, lineage: common.lineage, now: shifted) {
                try ExpiredAdapters.apply(registry, snapshots: $0.snapshotsHoldingExpired, retire: retire)
            }
            return (dump, report, adapters, effectiveTTL)
        }
        let snapshot = try environment.blobs.put(dump.encoded)
        let finalize: @Sendable (any SQLConnection) throws -> Void = { db in
            // Recorded before the expiry, so expiry erases this snapshot too when it holds an expired example
            // (the run then says "input expired" instead of keeping the text). Recording checks that every
            // example is still stored: one erased since the read deletes the blob and retries the step.
            try store.recordBlob(snapshot, kind: .bufferSnapshot, lineage: common.lineage,
                                 exampleIDs: dump.examples.map(\.id), blobs: environment.blobs)
            let applied = try PruneStep.apply(store: store, lineage: report.lineage, now: report.now, in: db)
            guard applied.deletesTheSameRows(as: report) else {
                throw StepError.bufferChanged(step: context.name, lineage: report.lineage)
            }
            // In the same transaction as the deletion, as `data forget` retires: no moment has the text gone and its
            // adapters still active, and a lost lease retires nothing.
            guard try ExpiredAdapters.apply(registry.on(db), snapshots: applied.snapshotsHoldingExpired, retire: retire)
                .hasTheSameEffect(as: adapters) else {
                throw StepError.expiredAdaptersChanged(step: context.name, lineage: report.lineage)
            }
        }
        let model = try? environment.modelURL(try context.manifestString("base_model", "name"))
        // Earlier snapshots holding an expired example, and this step's own when it holds one.
        let erasedBlobs = report.erasedBlobs + (report.deleted > 0 ? 1 : 0)
        let afterCommit: @Sendable () -> Void = {
            let freed = (try? PruneStep.afterCommit(of: report, store: store, blobs: environment.blobs)) ?? 0
            // Killed replays' scratch copies of the buffer may hold the expired text too.
            if report.deleted > 0 {
                ReplayScratch.removeStale(in: environment.state)
                for kept in KeptReplayScratch.erase(in: environment.state, database: environment.database, nameUnreachable: false) {
                    environment.log(kept.action == .removed ? "removed the replay scratch kept at \(kept.path): it held expired text"
                                    : "the replay scratch kept at \(kept.path) holds expired text and could not be removed: \(kept.reason ?? "")")
                }
            }
            environment.log("pruned \(report.deleted) expired example(s) of \(report.lineage) (TTL \(effectiveTTL) days); "
                            + "erased \(erasedBlobs) snapshot blob(s) that held them, \(freed) bytes")
            // The export follows the committed pointer, as after `data forget --retire-adapters`.
            if let model {
                for lineage in adapters.movedLineages {
                    let export = ActiveExportSync.follow(lineage: lineage, registry: registry, model: model, state: environment.state)
                    for line in export.lines { environment.log(line) }
                    if let failure = export.failure { environment.log("the active export of \(lineage) was not updated: \(failure)") }
                }
            }
        }
        if let sentence = adapters.sentence(lineage: common.lineage, retiring: retire) {
            environment.log(sentence)
            try context.progress(sentence)
        }
        return .completed(StepOutput(
            PruneOutput(lineage: common.lineage, now: now, ttlDays: effectiveTTL, deleted: report.deleted,
                        remainingTrain: report.remainingTrain, remainingHeldOut: report.remainingHeldOut,
                        inputs: PruneOutput.Inputs(bufferSnapshot: snapshot)),
            // Snapshots erased with the expired examples (this step's own included): they depend on earlier
            // nights' snapshots, so shown, not compared.
            timing: ["erased_blobs": .int(erasedBlobs)],
            registry: adapters.registrySection,
            finalize: finalize, afterCommit: afterCommit))
    }
}
