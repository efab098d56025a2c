import AdaptCore

/// Failures of the adapter registry and the score cache. Descriptions name lineages, versions and digests
/// (identifiers checked by `ShortIdentifier`), never adapter contents or a user's text.
public enum RegistryError: Error, Equatable, CustomStringConvertible {
    case invalidIdentifier(field: String)
    case invalidVersionReference
    case unknownLineage(String)
    case unknownVersion(lineage: String, version: String)
    case ambiguousVersion(version: String, lineages: [String])
    case parentInAnotherLineage(parent: String, lineage: String)
    case notApprovedByGate(lineage: String, version: String, reason: String)
    case nothingToRollBack(lineage: String)
    case adapterUnavailable(lineage: String, version: String, reason: String)
    case emptyAdapter
    /// A gate report whose numbers contradict its outcome or are out of range (`GateSummary.checkConsistency`).
    case inconsistentGateReport(reason: String)
    case corruptRow(table: String, reason: String)
    /// An engine gate report about other adapter bytes than the version's own: it is not stored.
    case gateReportForAnotherAdapter(lineage: String, version: String, reportAdapter: String, versionAdapter: String)
    /// The version was retired (trained on erased examples) and cannot be made active again.
    case versionRetired(lineage: String, version: String)
    /// A candidate started from a version that was retired meanwhile: its weights carry the erased text too.
    case weightsParentRetired(lineage: String, version: String)
    /// The version's adapter file was deleted by `adapt registry prune`; its row stays for the history.
    case versionPruned(lineage: String, version: String)

    /// The lineage an unknown bare version (`v9`, no `--lineage`) is reported under.
    static let anyLineage = "(any)"

    public var description: String {
        switch self {
        case let .invalidIdentifier(field):
            return "\(field) must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        case .invalidVersionReference:
            return "a version is written vN (e.g. v3) or LINEAGE/vN (e.g. mail/v3)"
        case let .unknownLineage(lineage):
            return "lineage \(lineage) has no registered adapter; see 'adapt registry list'"
        case let .unknownVersion(lineage, version) where lineage == RegistryError.anyLineage:
            return "no lineage has a version \(version); see 'adapt registry list'"
        case let .unknownVersion(lineage, version):
            return "lineage \(lineage) has no version \(version); see 'adapt registry list --lineage \(lineage)'"
        case let .ambiguousVersion(version, lineages):
            return "\(version) exists in lineages \(lineages.joined(separator: ", ")); pass --lineage or write LINEAGE/\(version)"
        case let .parentInAnotherLineage(parent, lineage):
            return "parent \(parent) does not belong to lineage \(lineage); pass a parent from the same lineage"
        case let .notApprovedByGate(lineage, version, reason):
            let number = version.dropFirst()
            return "\(lineage)/\(version) is not approved by the gate: \(reason); run 'adapt eval --lineage \(lineage) --version \(number)' "
                + "to score it on the held-out set against the active version, or pass --force to promote it anyway (recorded in the history)"
        case let .nothingToRollBack(lineage):
            return "lineage \(lineage) already uses the base model; there is nothing to roll back"
        case let .adapterUnavailable(lineage, version, reason):
            return "the adapter of \(lineage)/\(version) cannot be used: \(reason); nothing was changed"
        case .emptyAdapter:
            return "the adapter file is empty; pass the file the train step wrote"
        case let .inconsistentGateReport(reason):
            return "the gate report is inconsistent: \(reason); pass the report 'adapt gate --json' printed, unedited"
        case let .weightsParentRetired(lineage, version):
            return "the candidate was trained from \(lineage)/\(version), which was retired (trained on erased or expired examples), so it "
                + "carries that text too and is not registered; the next night trains from the version now active"
        case let .versionRetired(lineage, version):
            return "\(lineage)/\(version) was retired (it was trained on erased examples) and cannot be made active; "
                + "promote another version, or train a new one"
        case let .versionPruned(lineage, version):
            return "\(lineage)/\(version) was pruned (its adapter file was deleted by 'adapt registry prune') and cannot be made active; "
                + "promote another version, or train a new one"
        case let .gateReportForAnotherAdapter(lineage, version, reportAdapter, versionAdapter):
            return "a gate report of adapter \(reportAdapter) cannot be stored for \(lineage)/\(version), whose adapter is \(versionAdapter); "
                + "score the version itself with 'adapt eval --lineage \(lineage) --version \(version.dropFirst())'"
        case let .corruptRow(table, reason):
            return "a row of \(table) is unreadable (\(reason)); the database was modified outside adapt"
        }
    }
}
