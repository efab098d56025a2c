import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

// The database itself refuses what the registry's code never does, on either backend: a write that goes round
// the code (a hand edit, another program, a bug) fails and changes nothing.

@Test(arguments: Backend.allCases)
func theDatabaseRefusesAPointerMovedWithoutItsHistory(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(2)
    try f.registry.promoteScored(versions[0].reference)
    #expect(throws: StorageError.self) {
        try f.connection.run("UPDATE registry_active SET version_id = ? WHERE lineage = 'mail'", versions[1].id)
    }
    #expect(throws: StorageError.self) {
        try f.connection.run("INSERT INTO registry_active (lineage, version_id, updated_at) VALUES ('notes', ?, 0)", versions[1].id)
    }
    // A move recorded from somewhere the pointer is not.
    #expect(throws: StorageError.self) {
        try f.connection.run("INSERT INTO registry_history (lineage, from_version_id, to_version_id, reason, actor, at) "
                             + "VALUES ('mail', ?, ?, 'force', 'cli', 0)", versions[1].id, versions[0].id)
    }
    #expect(try f.snapshot() == (1, 1))
}

@Test(arguments: Backend.allCases)
func theDatabaseRefusesRewrittenHistoryAndVersions(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(2)
    try f.registry.promoteScored(versions[0].reference)
    #expect(throws: StorageError.self) { try f.connection.run("UPDATE registry_history SET reason = 'force'") }
    #expect(throws: StorageError.self) { try f.connection.run("DELETE FROM registry_history") }
    #expect(throws: StorageError.self) {
        try f.connection.run("UPDATE registry_versions SET adapter_digest = ? WHERE id = ?", Digest.sha256("other"), versions[1].id)
    }
    #expect(throws: StorageError.self) { try f.connection.run("UPDATE registry_versions SET number = 7 WHERE id = ?", versions[1].id) }
    try f.registry.retire([versions[0]], reason: "trained on erased examples")
    #expect(try f.registry.active(lineage: RegistryFixture.lineage) == nil)
    #expect(throws: StorageError.self) { try f.connection.run("UPDATE registry_versions SET retired_at = NULL WHERE id = ?", versions[0].id) }
    // A retired version cannot be made active, even with a history row naming it.
    #expect(throws: StorageError.self) {
        try f.connection.transaction {
            try f.connection.run("INSERT INTO registry_history (lineage, from_version_id, to_version_id, reason, actor, at) "
                                 + "VALUES ('mail', NULL, ?, 'force', 'cli', 0)", versions[0].id)
            try f.connection.run("UPDATE registry_active SET version_id = ? WHERE lineage = 'mail'", versions[0].id)
        }
    }
    #expect(try f.registry.history().map(\.reason) == [.gate, .retire])
    #expect(try f.registry.version(id: versions[1].id) == versions[1])
}

@Test func aRegistryWrittenBeforeTheRulesGainsThemAndKeepsItsVersions() throws {
    let dir = TemporaryDirectory("registry-upgrade")
    try dir.state.create()
    let database = try Database(path: dir.state.database.path)
    try database.migrate(Schema(component: "registry", migrations: Array(RegistrySchema.schema.migrations.prefix(2))))
    let adapter = Data("an adapter of the last build".utf8)
    let digest = try dir.state.blobs.put(adapter)
    // As the last build wrote a promotion: the pointer first, then its history row.
    try database.run("INSERT INTO registry_versions (lineage, number, adapter_digest, size, metadata, metrics, created_at) "
                     + "VALUES ('mail', 1, ?, ?, ?, ?, 0)", digest, adapter.count,
                     JSON.canonicalString(AdapterMetadata()), JSON.canonicalString(RegistryFixture.gate(.better)))
    try database.run("INSERT INTO registry_active (lineage, version_id, updated_at) VALUES ('mail', 1, 0)")
    try database.run("INSERT INTO registry_history (lineage, from_version_id, to_version_id, reason, actor, at) "
                     + "VALUES ('mail', NULL, 1, 'gate', 'pipeline', 0)")

    let registry = try AdapterRegistry(database: database, blobs: dir.state.blobs)
    #expect(try database.schemaVersion(of: "registry") == RegistrySchema.schema.migrations.count)
    let next = try registry.register(adapterData: adapter + Data([1]), lineage: RegistryFixture.lineage,
                                     metadata: AdapterMetadata(), metrics: RegistryFixture.gate(.better))
    try registry.promoteScored(next.reference)
    #expect(try registry.rollback(lineage: RegistryFixture.lineage).to?.number == 1)
    #expect(throws: StorageError.self) { try database.run("DELETE FROM registry_history") }
}
