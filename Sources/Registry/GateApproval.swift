import AdaptCore

/// Whether the gate lets a version become active: the rule `promote` applies without `--force`, the same for a
/// version the pipeline trained and one a person imported.
///
/// The version's newest engine report must be about its adapter bytes, measured on the lineage's current
/// held-out snapshot, against the version active now (or the base model when none is), and say `better`. A
/// report made before the active version moved, or before the held-out set grew, no longer counts: the
/// version must be scored again.
public enum GateApproval {
    /// Why `report` does not approve `target` now, nil when it does.
    public static func refusal(of target: AdapterVersion, report: EngineGateReport?, active: AdapterVersion?,
                               heldOut: Digest?) -> String? {
        guard let report else { return "it has no gate report made by the engine" }
        guard report.adapterDigest == target.adapterDigest else {
            return "its gate report is about adapter \(report.adapterDigest.short), not its own \(target.adapterDigest.short)"
        }
        guard let heldOut else { return "the lineage's current held-out set is not known here" }
        guard report.heldOutDigest == heldOut else {
            return "its gate report was made on held-out snapshot \(report.heldOutDigest.short); the current one is \(heldOut.short)"
        }
        guard report.incumbentVersionID == active?.id, report.incumbentDigest == active?.adapterDigest else {
            let compared = report.incumbentDigest.map { "adapter \($0.short)" } ?? "the base model"
            let now = active.map { "\($0.name) (\($0.adapterDigest.short))" } ?? "the base model"
            return "its gate report compared it with \(compared); the active one is now \(now)"
        }
        if report.outcome == .forgets {
            return "its gate outcome is 'forgets', not 'better': it failed the forgetting guard (it did not show it keeps "
                + "the base model's margins on the engine's canary)"
        }
        guard report.outcome == .better else { return "its gate outcome is '\(report.outcome.rawValue)', not 'better'" }
        return nil
    }
}
