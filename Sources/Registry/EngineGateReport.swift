import AdaptCore
import Storage

/// A gate report the engine made itself: a version scored on its lineage's pinned held-out set against the
/// incumbent, by the nightly eval step or by `adapt eval --lineage L --version N`. Only such a report, still
/// bound to what is current, lets `promote` move the pointer without `--force` (`GateApproval`).
///
/// It is bound to what it measured: the adapter's digest, the held-out snapshot's digest, and the incumbent
/// (the version active when it was scored, or the base model). A report brought from outside the engine has
/// no way into this table: only `AdapterRegistry.recordGateReport` writes it, and only the eval command and the
/// promote step call that.
public struct EngineGateReport: Sendable, Equatable {
    /// Who made it: the pipeline's eval step, or the eval command.
    public enum Maker: String, Sendable, Codable {
        case pipeline
        case evalCommand = "eval_command"
    }

    public let versionID: Int64
    public let adapterDigest: Digest
    public let heldOutDigest: Digest
    /// The version compared against, nil for the base model.
    public let incumbentVersionID: Int64?
    public let incumbentDigest: Digest?
    public let outcome: GateSummary.Outcome
    /// The whole report as the gate wrote it (numbers and fixed words only).
    public let report: JSONValue
    public let maker: Maker
    public let madeAt: Int64

    public init(versionID: Int64, adapterDigest: Digest, heldOutDigest: Digest, incumbentVersionID: Int64?,
                incumbentDigest: Digest?, outcome: GateSummary.Outcome, report: JSONValue, maker: Maker, madeAt: Int64) {
        self.versionID = versionID
        self.adapterDigest = adapterDigest
        self.heldOutDigest = heldOutDigest
        self.incumbentVersionID = incumbentVersionID
        self.incumbentDigest = incumbentDigest
        self.outcome = outcome
        self.report = report
        self.maker = maker
        self.madeAt = madeAt
    }

    static let columns = "version_id, adapter_digest, held_out_digest, incumbent_version_id, incumbent_digest, outcome, report, maker, made_at"

    init(row: Row) throws {
        func need<T>(_ value: T?, _ column: String) throws -> T {
            guard let value else { throw RegistryError.corruptRow(table: "registry_gate_reports", reason: "column \(column)") }
            return value
        }
        versionID = try need(row.int64("version_id"), "version_id")
        adapterDigest = try need(row.string("adapter_digest").flatMap(Digest.init(hex:)), "adapter_digest")
        heldOutDigest = try need(row.string("held_out_digest").flatMap(Digest.init(hex:)), "held_out_digest")
        incumbentVersionID = row.int64("incumbent_version_id")
        incumbentDigest = row.string("incumbent_digest").flatMap(Digest.init(hex:))
        outcome = try need(row.string("outcome").flatMap(GateSummary.Outcome.init(rawValue:)), "outcome")
        let text = try need(row.string("report"), "report")
        report = try need(try? JSON.decode(JSONValue.self, from: text, context: "registry_gate_reports.report"), "report")
        maker = try need(row.string("maker").flatMap(Maker.init(rawValue:)), "maker")
        madeAt = try need(row.int64("made_at"), "made_at")
    }
}
