import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

// A version's weights parent (`trained_from`): the version its training started from, kept apart from `parent`
// (the version active when it was registered), and fixed once written.

@Test(arguments: Backend.allCases)
func aVersionRecordsItsWeightsParentApartFromTheActiveParent(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let first = try f.register(1)[0]
    try f.registry.promoteScored(first.reference)
    let warm = try f.registry.register(adapterData: Data("warm".utf8), lineage: RegistryFixture.lineage, parent: first.reference,
                                       trainedFrom: first.reference, metadata: AdapterMetadata())
    let cold = try f.registry.register(adapterData: Data("cold".utf8), lineage: RegistryFixture.lineage, parent: first.reference,
                                       metadata: AdapterMetadata())
    #expect(warm.trainedFromID == first.id && warm.parentID == first.id)
    #expect(cold.trainedFromID == nil && cold.parentID == first.id)
    #expect(try f.registry.version(warm.reference).trainedFromID == first.id)
    #expect(try f.registry.versions().map(\.trainedFromID) == [nil, first.id, nil])
}

@Test(arguments: Backend.allCases)
func theDatabaseRefusesARewrittenWeightsParent(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(2)
    let warm = try f.registry.register(adapterData: Data("warm".utf8), lineage: RegistryFixture.lineage,
                                       trainedFrom: versions[0].reference, metadata: AdapterMetadata())
    #expect(throws: StorageError.self) {
        try f.connection.run("UPDATE registry_versions SET trained_from_id = ? WHERE id = ?", versions[1].id, warm.id)
    }
    #expect(throws: StorageError.self) {
        try f.connection.run("UPDATE registry_versions SET trained_from_id = ? WHERE id = ?", versions[0].id, versions[1].id)
    }
    #expect(try f.registry.version(warm.reference).trainedFromID == versions[0].id)
}

@Test
func aWeightsParentOfAnotherLineageIsRefused() throws {
    let f = try RegistryFixture()
    let other = try f.register(1, lineage: ShortIdentifier("notes")!)[0]
    #expect(throws: RegistryError.parentInAnotherLineage(parent: "notes/v1", lineage: "mail")) {
        try f.registry.register(adapterData: Data("x".utf8), lineage: RegistryFixture.lineage, trainedFrom: other.reference,
                                metadata: AdapterMetadata())
    }
}

@Test
func registryListPrintsTrainedFromAndNullForAVersionTrainedFromZero() throws {
    let cli = RegistryCLI()
    let database = try Database(path: cli.dir.state.database.path)
    let registry = try AdapterRegistry(database: database, blobs: cli.dir.state.blobs)
    let lineage = ShortIdentifier("mail")!
    let first = try registry.register(adapterData: TestAdapter.bytes(1), lineage: lineage, metadata: AdapterMetadata())
    _ = try registry.register(adapterData: TestAdapter.bytes(2), lineage: lineage, trainedFrom: first.reference, metadata: AdapterMetadata())
    let list = try #require(try cli.json(["registry", "list"]).arrayValue)
    #expect(list.map { $0["trained_from"] } == [.null, .string("v1")])
    let shown = try cli.json(["registry", "show", "mail/v2"])
    #expect(shown["trained_from"] == .string("v1"))
}
