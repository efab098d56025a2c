import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

/// The gate's fourth outcome in the registry (issue 42): a `forgets` report is stored on both backends, never
/// approves a promotion, and a forced promotion says it bypassed the forgetting guard.
@Test(arguments: Backend.allCases)
func aForgetsReportIsStoredRefusedByPromoteAndNamedByForce(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let version = try #require(try f.register(1, outcome: .forgets).first)
    try f.registry.recordEngineReport(version.reference, outcome: .forgets)
    #expect(try f.registry.latestGateReport(of: version)?.outcome == .forgets)
    #expect(try f.registry.version(version.reference).metrics.gate?.outcome == .forgets)

    do {
        try f.registry.promote(version.reference, heldOut: RegistryFixture.heldOut)
        Issue.record("a forgets report promoted")
    } catch let RegistryError.notApprovedByGate(_, _, reason) {
        #expect(reason.contains("'forgets'") && reason.contains("forgetting guard"), "\(reason)")
    }
    #expect(try f.registry.active(lineage: RegistryFixture.lineage) == nil)

    let forced = try f.registry.promote(version.reference, reason: .force, heldOut: RegistryFixture.heldOut)
    #expect(forced.bypassed?.contains("forgetting guard") == true, "\(forced.bypassed ?? "nothing")")
    #expect(try f.registry.history(lineage: RegistryFixture.lineage).last?.bypassed == forced.bypassed)
}

@Test func aForgetsVerdictMakesNoClaimAboutTheHeldOutPValue() throws {
    // Decided by the canary, whatever the held-out test said short of `worse`: a p of 0.001 or 0.4 is consistent.
    for p in [0.001, 0.4] {
        let summary = GateSummary(outcome: .forgets, n: 23, statistic: 10, pValue: p, method: ShortIdentifier("exact")!,
                                  zeroMethod: ShortIdentifier("wilcox")!, alternative: ShortIdentifier("less")!,
                                  medianDifference: -0.5, effectSize: -0.8, alpha: 0.05)
        #expect(throws: Never.self) { try summary.checkConsistency() }
    }
}

@Test func aRegistryMadeBeforeForgetsKeepsItsGateReportsThroughTheMigration() throws {
    let dir = TemporaryDirectory("registry-forgets-migration")
    try dir.state.create()
    let database = try Database(path: dir.state.database.path)
    try database.migrate(Schema(component: "registry", migrations: Array(RegistrySchema.schema.migrations.dropLast())))
    let adapter = Data("an adapter of the last build".utf8)
    let digest = try dir.state.blobs.put(adapter)
    try database.run("INSERT INTO registry_versions (lineage, number, adapter_digest, size, metadata, metrics, created_at) "
                     + "VALUES ('mail', 1, ?, ?, ?, ?, 0)", digest, adapter.count,
                     JSON.canonicalString(AdapterMetadata()), JSON.canonicalString(RegistryFixture.gate(.better)))
    try database.run("INSERT INTO registry_gate_reports (version_id, adapter_digest, held_out_digest, outcome, report, maker, made_at) "
                     + "VALUES (1, ?, ?, 'better', '{}', 'eval_command', 5)", digest, RegistryFixture.heldOut)
    // The old CHECK knows three outcomes only.
    #expect(throws: StorageError.self) {
        try database.run("INSERT INTO registry_gate_reports (version_id, adapter_digest, held_out_digest, outcome, report, maker, made_at) "
                         + "VALUES (1, ?, ?, 'forgets', '{}', 'eval_command', 6)", digest, RegistryFixture.heldOut)
    }

    let registry = try AdapterRegistry(database: database, blobs: dir.state.blobs)
    #expect(try database.schemaVersion(of: "registry") == RegistrySchema.schema.migrations.count)
    let version = try registry.version(VersionReference(parsing: "mail/v1"))
    let kept = try #require(try registry.latestGateReport(of: version))
    #expect(kept.outcome == .better && kept.madeAt == 5 && kept.heldOutDigest == RegistryFixture.heldOut)
    try registry.recordEngineReport(version.reference, outcome: .forgets)
    #expect(try registry.latestGateReport(of: version)?.outcome == .forgets)
    // Still never rewritten.
    #expect(throws: StorageError.self) { try database.run("UPDATE registry_gate_reports SET outcome = 'better'") }
}
