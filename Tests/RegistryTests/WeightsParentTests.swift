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

/// A version's weights carry what its whole `trained_from` chain trained on: erasure lists every version that
/// started, at any remove, from one that saw the erased text, and nothing trained from a retired version is
/// registered.
@Test(arguments: Backend.allCases)
func erasureListsEveryVersionDescendedByWeightsFromOneThatSawTheText(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let lineage = RegistryFixture.lineage
    let snapshots = (1...3).map { Digest.sha256(Data("snapshot \($0)".utf8)) }
    func register(_ name: String, from parent: AdapterVersion?, dataset: Digest) throws -> AdapterVersion {
        try f.registry.register(adapterData: Data(name.utf8), lineage: lineage, trainedFrom: parent?.reference,
                                metadata: AdapterMetadata(dataset: dataset))
    }
    let v1 = try register("v1", from: nil, dataset: snapshots[0])
    let v2 = try register("v2", from: v1, dataset: snapshots[1])
    let v3 = try register("v3", from: v2, dataset: snapshots[2])
    _ = try register("v4", from: nil, dataset: snapshots[2])
    #expect(try f.registry.versions(trainedOn: [snapshots[0]]).map(\.name) == ["v1", "v2", "v3"])
    #expect(try f.registry.versions(trainedOn: [snapshots[1]]).map(\.name) == ["v2", "v3"])
    #expect(try f.registry.versions(trainedOn: [snapshots[2]]).map(\.name) == ["v3", "v4"])

    try f.registry.retire(try f.registry.versions(trainedOn: [snapshots[0]]), reason: "trained on erased examples")
    #expect(throws: RegistryError.weightsParentRetired(lineage: lineage.value, version: v3.name)) {
        try register("v5", from: v3, dataset: snapshots[2])
    }
}
