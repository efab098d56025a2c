import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

@Test(arguments: Backend.allCases)
func versionsAreNumberedPerLineage(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(2)
    try f.register(1, lineage: ShortIdentifier("notes")!)
    #expect(try f.registry.versions().map { "\($0.lineage)/\($0.name)" } == ["mail/v1", "mail/v2", "notes/v1"])
    #expect(try f.registry.lineages().map(\.value) == ["mail", "notes"])
    #expect(throws: RegistryError.ambiguousVersion(version: "v1", lineages: ["mail", "notes"])) {
        try f.registry.version(VersionReference(parsing: "v1"))
    }
    #expect(try f.registry.version(VersionReference(parsing: "v2")).lineage.value == "mail")
}

@Test(arguments: Backend.allCases)
func adapterBytesAreContentAddressedAndVerifiedOnLoad(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let data = Data((0..<4096).map { UInt8($0 % 251) })
    let version = try f.registry.register(adapterData: data, lineage: RegistryFixture.lineage, metadata: AdapterMetadata())
    #expect(version.adapterDigest == Digest.sha256(data))
    #expect(try f.registry.adapterData(version) == data)
    let file = f.dir.state.blobs.url(for: version.adapterDigest)
    let before = try? FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date
    // Registering the same bytes again shares the blob and does not rewrite it.
    let again = try f.registry.register(adapterData: data, lineage: RegistryFixture.lineage, metadata: AdapterMetadata())
    #expect(again.adapterDigest == version.adapterDigest && again.number == 2)
    if backend == .sqlite {
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date == before)
    } else {
        #expect(try f.connection.scalar("SELECT count(*) FROM blobs") == .integer(1))
    }
    try f.damageBlob(version.adapterDigest)
    #expect(throws: RegistryError.self) { try f.registry.adapterData(version) }
}

@Test(arguments: Backend.allCases)
func parentMustBelongToTheSameLineage(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1)
    let notes = ShortIdentifier("notes")!
    let child = try f.registry.register(adapterData: Data([1, 2, 3]), lineage: RegistryFixture.lineage,
                                        parent: VersionReference(parsing: "v1"), metadata: AdapterMetadata())
    #expect(child.parentID == (try f.registry.version(VersionReference(parsing: "mail/v1")).id))
    #expect(throws: RegistryError.unknownLineage("notes")) {
        try f.registry.register(adapterData: Data([4]), lineage: notes, parent: VersionReference(parsing: "notes/v1"), metadata: AdapterMetadata())
    }
    #expect(throws: RegistryError.emptyAdapter) {
        try f.registry.register(adapterData: Data(), lineage: notes, metadata: AdapterMetadata())
    }
}

@Test(arguments: Backend.allCases)
func promotionRequiresTheEnginesBetterReportUnlessForced(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1, outcome: .notEnoughEvidence)
    let v1 = try VersionReference(parsing: "mail/v1")
    try f.registry.recordEngineReport(v1, outcome: .notEnoughEvidence)
    #expect(throws: RegistryError.notApprovedByGate(lineage: "mail", version: "v1",
                                                    reason: "its gate outcome is 'not_enough_evidence', not 'better'")) {
        try f.registry.promote(v1, heldOut: RegistryFixture.heldOut)
    }
    #expect(try f.snapshot() == (nil, 0))
    let change = try f.registry.promote(v1, reason: .force, heldOut: RegistryFixture.heldOut)
    #expect(change.bypassed?.contains("its gate outcome is 'not_enough_evidence', not 'better'") == true)
    let move = try #require(try f.registry.history().last)
    #expect(move.reason == .force && move.bypassed == change.bypassed && move.fromVersionID == nil)
    #expect(try f.snapshot() == (1, 1))
}

@Test(arguments: Backend.allCases)
func aBetterVerdictInTheMetricsAloneDoesNotMakeAVersionPromotable(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1, outcome: .better)
    let v1 = try VersionReference(parsing: "mail/v1")
    #expect(throws: RegistryError.notApprovedByGate(lineage: "mail", version: "v1", reason: "it has no gate report made by the engine")) {
        try f.registry.promote(v1, heldOut: RegistryFixture.heldOut)
    }
    do {
        try f.registry.promote(v1, heldOut: RegistryFixture.heldOut)
    } catch {
        #expect("\(error)".contains("run 'adapt eval --lineage mail --version 1'"))
    }
    #expect(try f.snapshot() == (nil, 0))
}

@Test(arguments: Backend.allCases)
func theEnginesReportCountsOnlyForTheHeldOutSetAndIncumbentItWasMadeWith(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(2)
    let (v1, v2) = (try VersionReference(parsing: "mail/v1"), try VersionReference(parsing: "mail/v2"))
    try f.registry.recordEngineReport(v1, heldOut: Digest.sha256("an older held-out snapshot"))
    #expect(throws: RegistryError.self) { try f.registry.promote(v1, heldOut: RegistryFixture.heldOut) }
    try f.registry.recordEngineReport(v1)
    try f.registry.recordEngineReport(v2)
    try f.registry.promote(v2, heldOut: RegistryFixture.heldOut)
    // v1 was scored against the base model; v2 is active now.
    #expect(throws: RegistryError.self) { try f.registry.promote(v1, heldOut: RegistryFixture.heldOut) }
    #expect(try f.snapshot() == (2, 1))
    try f.registry.recordEngineReport(v1, outcome: .worse)
    #expect(throws: RegistryError.self) { try f.registry.promote(v1, heldOut: RegistryFixture.heldOut) }
    try f.registry.recordEngineReport(v1)
    try f.registry.promote(v1, heldOut: RegistryFixture.heldOut)
    #expect(try f.snapshot() == (1, 2))
}

@Test(arguments: Backend.allCases)
func promotingTheActiveVersionChangesNothing(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1)
    let v1 = try VersionReference(parsing: "mail/v1")
    try f.registry.promoteScored(v1)
    let again = try f.registry.promoteScored(v1)
    #expect(again.move == nil)
    #expect(try f.snapshot() == (1, 1))
}

@Test(arguments: Backend.allCases)
func rollbackWalksBackThroughPromotionsToTheBaseModel(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(3)
    for n in 1...3 { try f.registry.promoteScored(VersionReference(lineage: RegistryFixture.lineage, number: n)) }
    #expect(try f.registry.rollback(lineage: RegistryFixture.lineage).to?.number == 2)
    #expect(try f.registry.rollback(lineage: RegistryFixture.lineage).to?.number == 1)
    let last = try f.registry.rollback(lineage: RegistryFixture.lineage)
    #expect(last.to == nil && last.from?.number == 1)
    #expect(try f.snapshot() == (nil, 6))
    #expect(throws: RegistryError.nothingToRollBack(lineage: "mail")) { try f.registry.rollback(lineage: RegistryFixture.lineage) }
    #expect(try f.registry.history().map(\.reason) == [.gate, .gate, .gate, .rollback, .rollback, .rollback])
}

@Test(arguments: Backend.allCases)
func rollbackAfterAForcedJumpReturnsToWhatWasActive(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(3)
    try f.registry.promoteScored(VersionReference(parsing: "mail/v3"))
    try f.registry.promote(VersionReference(parsing: "mail/v1"), reason: .force)
    #expect(try f.registry.rollback(lineage: RegistryFixture.lineage).to?.number == 3)
}

@Test(arguments: Backend.allCases)
func unknownVersionsAndLineagesAreClearErrorsThatChangeNothing(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1)
    try f.registry.promoteScored(VersionReference(parsing: "mail/v1"))
    #expect(throws: RegistryError.unknownVersion(lineage: "mail", version: "v7")) {
        try f.registry.promoteScored(VersionReference(parsing: "mail/v7"))
    }
    do {
        try f.registry.promoteScored(VersionReference(parsing: "v7"))
        Issue.record("a version no lineage has was promoted")
    } catch {
        #expect("\(error)" == "no lineage has a version v7; see 'adapt registry list'")
    }
    #expect(throws: RegistryError.unknownLineage("news")) { try f.registry.promoteScored(VersionReference(parsing: "news/v1")) }
    #expect(throws: RegistryError.unknownLineage("news")) { try f.registry.rollback(lineage: ShortIdentifier("news")!) }
    #expect(throws: RegistryError.invalidVersionReference) { try VersionReference(parsing: "3") }
    #expect(throws: RegistryError.invalidVersionReference) { try VersionReference(parsing: "v0") }
    #expect(throws: RegistryError.invalidVersionReference) { try VersionReference(parsing: "a/b/v1") }
    #expect(try f.snapshot() == (1, 1))
}

@Test(arguments: Backend.allCases)
func corruptOrMissingAdapterRefusesPromotionAndRollback(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(3)
    try f.registry.promoteScored(VersionReference(parsing: "mail/v1"))
    try f.registry.promoteScored(VersionReference(parsing: "mail/v2"))
    try f.damageBlob(versions[2].adapterDigest)
    #expect(throws: RegistryError.self) { try f.registry.promoteScored(VersionReference(parsing: "mail/v3")) }
    try f.deleteBlob(versions[0].adapterDigest)
    #expect(throws: RegistryError.self) { try f.registry.rollback(lineage: RegistryFixture.lineage) }
    #expect(try f.snapshot() == (2, 2))
    let states = try f.registry.verify().map(\.state)
    #expect(states == [.missing, .ok, .corrupt])
}

@Test(arguments: Backend.allCases)
func promotionCommitsOrRollsBackWithTheCallersTransaction(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(2)
    try f.connection.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT)")
    try f.connection.run("INSERT INTO jobs VALUES (1, 'running')")
    struct WorkerLostLease: Error {}
    // The promote job loses its lease after flipping: nothing of the transaction may remain.
    #expect(throws: WorkerLostLease.self) {
        try f.connection.transaction {
            try f.connection.run("UPDATE jobs SET state = 'completed' WHERE id = 1")
            try f.registry.promoteScored(VersionReference(parsing: "mail/v1"), actor: ShortIdentifier("pipeline")!, in: f.connection)
            throw WorkerLostLease()
        }
    }
    #expect(try f.snapshot() == (nil, 0))
    #expect(try f.connection.scalar("SELECT state FROM jobs") == .text("running"))
    // A failed promotion inside a transaction that goes on leaves the caller's work intact.
    try f.connection.transaction {
        try f.connection.run("UPDATE jobs SET state = 'completed' WHERE id = 1")
        #expect(throws: RegistryError.self) { try f.registry.promoteScored(VersionReference(parsing: "mail/v9"), actor: ShortIdentifier("pipeline")!, in: f.connection) }
        try f.registry.promoteScored(VersionReference(parsing: "mail/v2"), actor: ShortIdentifier("pipeline")!, in: f.connection)
    }
    #expect(try f.snapshot() == (2, 1))
    #expect(try f.connection.scalar("SELECT state FROM jobs") == .text("completed"))
    #expect(try f.registry.history().last?.actor.value == "pipeline")
}

@Test(arguments: Backend.allCases)
func pointerIsVisibleToASecondConnectionOnlyAfterCommit(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    try f.register(1)
    let reader = try f.secondRegistry()
    try f.connection.transaction {
        try f.registry.promoteScored(VersionReference(parsing: "mail/v1"))
        #expect(try reader.active(lineage: RegistryFixture.lineage) == nil)
    }
    #expect(try reader.active(lineage: RegistryFixture.lineage)?.number == 1)
}

@Test(arguments: Backend.allCases)
func aGateReportAboutOtherAdapterBytesIsNotStored(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(2)
    let report = EngineGateReport(
        versionID: versions[0].id, adapterDigest: versions[1].adapterDigest, heldOutDigest: RegistryFixture.heldOut,
        incumbentVersionID: nil, incumbentDigest: nil, outcome: .better, report: .object([:]), maker: .evalCommand, madeAt: 0)
    #expect(throws: RegistryError.self) { try f.registry.recordGateReport(report) }
    #expect(try f.registry.latestGateReport(of: versions[0]) == nil)
    #expect(throws: RegistryError.self) { try f.registry.promote(versions[0].reference, heldOut: RegistryFixture.heldOut) }
}
