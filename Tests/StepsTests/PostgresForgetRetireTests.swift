import AdaptCore
import Foundation
import Registry
import ReplayBuffer
import Storage
import Testing
import TestSupport

/// `adapt data forget --retire-adapters --database postgres://…`: the versions trained on a snapshot that held an
/// erased example are listed and retired, and the active one moved off, in the erasure's transaction.
@Test func forgetWithRetireAdaptersOnPostgresRetiresTheVersionTrainedOnTheErasedSnapshot() throws {
    let url = try PostgresCluster.shared().makeDatabase()
    let connection = try PostgresConnection(url)
    let store = try ReplayStore(database: connection)
    _ = try store.importJSONL(Data("{\"text\": \"erased\"}\n{\"text\": \"kept\"}\n".utf8), lineage: "mail")
    let id = try #require(try store.examples().first { $0.completion == "erased" }?.id)
    let blobs = try PostgresBlobStore(connection: connection)
    let snapshot = try blobs.put(Data("a training snapshot holding the erased example".utf8))
    try store.recordBlob(snapshot, kind: .trainSnapshot, lineage: "mail", exampleIDs: [id])
    let registry = try AdapterRegistry(connection: connection, blobs: blobs)
    let lineage = try #require(ShortIdentifier("mail"))
    try registry.register(adapterData: Data("adapter bytes".utf8), lineage: lineage, metadata: AdapterMetadata(dataset: snapshot))
    try registry.promote(VersionReference(lineage: lineage, number: 1), reason: .force)

    let directory = TemporaryDirectory("adapt-pg-retire")
    let result = try Executables.run("adapt", ["--state", directory.file("state").path, "--database", url,
                                               "data", "forget", "--id", id, "--retire-adapters", "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let report = try JSON.decode(JSONValue.self, from: result.stdout, context: "stdout")
    #expect(report["forgotten"] == .int(1) && report["erased_blobs"] == .int(1) && report["retired"] == .int(1), "\(report)")
    #expect(report["adapter_versions"] == .array([.object(["lineage": .string("mail"), "version": .string("v1"),
                                                           "retired": .bool(true), "retired_now": .bool(true)])]))
    #expect(report["active_moves"] == .array([.object(["lineage": .string("mail"), "from": .string("v1"), "to": .null])]))
    #expect(try registry.active(lineage: lineage) == nil)
    #expect(try registry.version(VersionReference(lineage: lineage, number: 1)).isRetired)
    #expect(try !blobs.contains(snapshot))
    #expect(try store.examples().map(\.completion) == ["kept"])
}
