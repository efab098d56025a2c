import AdaptCore
import Pipelines
import ReplayBuffer

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
public enum PruneBody {
    public static func run(_ context: StepContext) throws -> StepOutcome {
        let environment = context.environment
        let common = try PlannedInput(context.input)
        let parameters = try PlannedInput.parameters(PruneParameters.self, from: context.input)
        let store = try ReplayStore(database: environment.database, clock: environment.clock)
        let now = context.recorded?["now"].flatMap { $0.intValue.map(Int64.init) } ?? environment.clock.nowMilliseconds()

        // The snapshot's examples are recorded in the transaction that read them, so an erasure cannot fall
        // between the read and the record and miss this blob.
        let (dump, snapshot) = try environment.database.transaction {
            let dump = try store.dump(lineage: common.lineage)
            let snapshot = try environment.blobs.put(dump.encoded)
            try store.recordBlob(snapshot, kind: .bufferSnapshot, lineage: common.lineage, exampleIDs: dump.examples.map(\.id),
                                 blobs: environment.blobs)
            return (dump, snapshot)
        }
        let lineageTTL = dump.policy.ttlDays
        let effectiveTTL = min(lineageTTL, parameters.ttlDays)
        let shifted = now + Int64(lineageTTL - effectiveTTL) * 86_400_000
        // Expiry reaches every copy: a snapshot holding an expired example is erased with it, this step's own
        // included (its run then says "input expired" when replayed instead of keeping the text).
        let report = try PruneStep.run(store: store, lineage: common.lineage, now: shifted, blobs: environment.blobs)
        environment.log("pruned \(report.deleted) expired example(s) of \(common.lineage) (TTL \(effectiveTTL) days); "
                        + "erased \(report.erasedBlobs) snapshot blob(s) that held them")
        return .completed(StepOutput(
            result: [
                "lineage": .string(common.lineage), "now": .int(Int(now)), "ttl_days": .int(effectiveTTL),
                "deleted": .int(report.deleted), "remaining_train": .int(report.remainingTrain),
                "remaining_held_out": .int(report.remainingHeldOut),
            ],
            inputs: ["buffer_snapshot": .string(snapshot.hex)],
            // Counts of what expiry removed besides the rows; they depend on earlier nights, so shown, not compared.
            timing: ["erased_blobs": .int(report.erasedBlobs), "freed_bytes": .int(Int(report.freedBytes))]))
    }
}
