import AdaptCore
import Foundation
import Registry
import Testing
import TestSupport

// Retirement (issue 16): a version trained on erased text keeps its row and file but can never be made active;
// an active one is replaced by the newest version that is not retired and was once active, or the base model.

@Test(arguments: Backend.allCases)
func retiringTheActiveVersionMovesTheLineageToTheNewestOnceActiveVersion(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(3)
    for v in versions { try f.registry.promoteScored(v.reference) }
    let candidate = try f.register(1, outcome: .worse)  // never active: an erasure must not activate it
    let result = try f.registry.retire([versions[2]], reason: "trained on erased examples")
    #expect(result.retired.map(\.number) == [3])
    #expect(try f.registry.active(lineage: RegistryFixture.lineage)?.number == 2)
    #expect(result.moves.first?.move?.reason == .retire)
    #expect(try candidate[0].number == 4 && !f.registry.version(id: candidate[0].id).isRetired)
    // The file stays; the version can no longer be promoted.
    #expect(try f.blobs.contains(versions[2].adapterDigest))
    #expect(throws: RegistryError.versionRetired(lineage: "mail", version: "v3")) {
        try f.registry.promote(versions[2].reference, reason: .force)
    }
}

@Test(arguments: Backend.allCases)
func retiringEveryOnceActiveVersionFallsBackToTheBaseModelAndRollbackWalksPastRetiredOnes(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let versions = try f.register(3)
    for v in versions { try f.registry.promoteScored(v.reference) }
    try f.registry.retire([versions[1]], reason: "trained on erased examples")
    #expect(try f.registry.active(lineage: RegistryFixture.lineage)?.number == 3)  // v3 is not retired
    let back = try f.registry.rollback(lineage: RegistryFixture.lineage)
    #expect(back.to?.number == 1, "rollback stopped on the retired v2")
    try f.registry.retire([versions[0], versions[2]], reason: "trained on erased examples")
    #expect(try f.registry.active(lineage: RegistryFixture.lineage) == nil)
    #expect(try f.registry.versions().allSatisfy(\.isRetired))
}
