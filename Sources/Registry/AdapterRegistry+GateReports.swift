import AdaptCore
import Storage

/// The engine's own gate reports (`EngineGateReport`), which `promote` reads through `GateApproval`.
extension AdapterRegistry {
    /// Stores a report the engine made (never one read from a file). Refused when the report is not about the
    /// version's own adapter bytes. In one transaction, a savepoint inside the caller's.
    public func recordGateReport(_ report: EngineGateReport) throws {
        try connection.transaction {
            let version = try version(id: report.versionID)
            guard version.adapterDigest == report.adapterDigest else {
                throw RegistryError.gateReportForAnotherAdapter(lineage: version.lineage.value, version: version.name,
                                                                reportAdapter: report.adapterDigest.short,
                                                                versionAdapter: version.adapterDigest.short)
            }
            try connection.run(
                "INSERT INTO registry_gate_reports (\(EngineGateReport.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                report.versionID, report.adapterDigest, report.heldOutDigest, report.incumbentVersionID, report.incumbentDigest,
                report.outcome.rawValue, JSON.canonicalString(report.report), report.maker.rawValue, report.madeAt)
        }
    }

    /// The newest report the engine made about `version`, nil when it was never scored by the engine.
    public func latestGateReport(of version: AdapterVersion) throws -> EngineGateReport? {
        try connection.queryOne(
            "SELECT \(EngineGateReport.columns) FROM registry_gate_reports WHERE version_id = ? ORDER BY id DESC LIMIT 1",
            version.id).map(EngineGateReport.init(row:))
    }
}
