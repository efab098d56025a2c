import AdaptCore
import Foundation
import Registry
import ReplayBuffer
import Steps
import Storage
import Testing
import TestSupport

/// The prune step's body and its completion, run in process on SQLite and PostgreSQL: the versions trained (through
/// their `trained_from` chain) on a snapshot that held an expired example are listed by the body and retired only in
/// the completion, and a completion whose list changed since the body is refused.
@Suite(.serialized) struct PruneExpiredAdaptersTests {
    struct Backend {
        let connection: any SQLConnection
        let blobs: any BlobStorage
        let directory: TemporaryDirectory
        let lineage = ShortIdentifier("mail")!

        var registry: AdapterRegistry { get throws { try AdapterRegistry(connection: connection, blobs: blobs) } }

        static func sqlite() throws -> Backend {
            let directory = TemporaryDirectory("adapt-prune-adapters")
            try directory.state.create()
            let database = try Database(path: directory.state.database.path, durability: .normal)
            return Backend(connection: database, blobs: directory.state.blobs, directory: directory)
        }

        static func postgres() throws -> Backend {
            let connection = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
            let directory = TemporaryDirectory("adapt-pg-prune-adapters")
            try directory.state.create()
            return Backend(connection: connection, blobs: try PostgresBlobStore(connection: connection), directory: directory)
        }

        /// Examples (the training ones go at once: the test is 45 days later), a training snapshot holding them, v1 trained on it and v2 started from v1 (active), and v3
        /// trained from zero on a snapshot of its own (never active).
        @discardableResult
        func chain() throws -> Int {
            let store = try ReplayStore(database: connection)
            let lines = (1...40).map { "{\"text\": \"note \($0)\"}\n" }.joined()
            _ = try store.importJSONL(Data(lines.utf8), lineage: lineage.value)
            let ids = try store.examples().filter { $0.split == .train }.map(\.id)
            try #require(!ids.isEmpty)
            let snapshot = try blobs.put(Data("a training snapshot".utf8))
            try store.recordBlob(snapshot, kind: .trainSnapshot, lineage: lineage.value, exampleIDs: ids)
            let registry = try self.registry
            let v1 = try registry.register(adapterData: Data("v1".utf8), lineage: lineage, metadata: AdapterMetadata(dataset: snapshot))
            try registry.register(adapterData: Data("v2".utf8), lineage: lineage, trainedFrom: v1.reference,
                                  metadata: AdapterMetadata(dataset: try blobs.put(Data("v2's own snapshot".utf8))))
            try registry.register(adapterData: Data("v3".utf8), lineage: lineage,
                                  metadata: AdapterMetadata(dataset: try blobs.put(Data("v3's own snapshot".utf8))))
            try registry.promote(VersionReference(lineage: lineage, number: 2), reason: .force)
            return ids.count
        }

        /// The prune body's output, 45 days later (every example past the pipeline's 30-day TTL).
        func prune(retire: Bool) throws -> StepOutput {
            var input: [String: JSONValue] = ["lineage": .string(lineage.value), "night": .string("2027-01-15"), "seed": .int(1),
                                              "ttl_days": .int(30)]
            if retire { input["ttl_retires_adapters"] = .bool(true) }
            let environment = StepEnvironment(state: directory.state, connection: connection, blobs: blobs,
                                              clock: OffsetClock(offsetMilliseconds: 45 * 86_400_000))
            let context = StepContext(environment: environment, name: "prune", input: .object(input), manifest: .object([:]), ancestors: [:])
            guard case let .completed(output) = try StepRunner.run(kind: "prune", context) else {
                Issue.record("prune was deferred")
                throw CancellationError()
            }
            return output
        }

        func complete(_ output: StepOutput) throws {
            try connection.transaction { try output.finalize?(connection) }
            output.afterCommit?()
        }

        func retired() throws -> [String] { try registry.versions(lineage: lineage).filter(\.isRetired).map(\.name) }
    }

    static func expectRetiresTheChainOnlyInTheCompletion(_ backend: Backend) throws {
        let training = try backend.chain()
        let output = try backend.prune(retire: true)
        #expect(output.result["deleted"] == .int(training))
        #expect(output.registry["trained_on_expired"] == .array([.string("mail/v1"), .string("mail/v2")]))
        #expect(output.registry["retired"] == .array([.string("mail/v1"), .string("mail/v2")]))
        let toBase: JSONValue = .array([.object(["lineage": .string("mail"), "from": .string("v2"), "to": .null])])
        #expect(output.registry["active_moves"] == toBase)
        #expect(try backend.retired() == [], "the body retired before its completion")
        #expect(try backend.registry.active(lineage: backend.lineage)?.name == "v2")

        try backend.complete(output)
        #expect(try backend.retired() == ["v1", "v2"])
        #expect(try backend.registry.versions(lineage: backend.lineage).first { $0.isRetired }?.retiredReason == "trained on expired examples")
        // v3 was never active: the pointer goes to the base model, not to a candidate no gate approved.
        #expect(try backend.registry.active(lineage: backend.lineage) == nil)
    }

    @Test func expiryRetiresTheWholeChainInThePrunesCompletionOnSQLite() throws {
        try Self.expectRetiresTheChainOnlyInTheCompletion(try Backend.sqlite())
    }

    @Test func expiryRetiresTheWholeChainInThePrunesCompletionOnPostgres() throws {
        try Self.expectRetiresTheChainOnlyInTheCompletion(try Backend.postgres())
    }

    @Test func withoutTheFieldExpiryListsTheChainAndRetiresNothing() throws {
        let backend = try Backend.sqlite()
        try backend.chain()
        let output = try backend.prune(retire: false)
        #expect(output.registry["trained_on_expired"] == .array([.string("mail/v1"), .string("mail/v2")]))
        #expect(output.registry["retired"] == .array([]) && output.registry["active_moves"] == .array([]))
        try backend.complete(output)
        #expect(try backend.retired() == [])
        #expect(try backend.registry.active(lineage: backend.lineage)?.name == "v2")
    }

    @Test func aCompletionWhoseVersionsChangedSinceTheBodyIsRefusedAndRetiresNothing() throws {
        let backend = try Backend.sqlite()
        try backend.chain()
        let output = try backend.prune(retire: true)
        // A version started from v2 is registered between the body and its completion: it carries the text too.
        let registry = try backend.registry
        try registry.register(adapterData: Data("v4".utf8), lineage: backend.lineage,
                              trainedFrom: VersionReference(lineage: backend.lineage, number: 2), metadata: AdapterMetadata())
        #expect(throws: StepError.expiredAdaptersChanged(step: "prune", lineage: "mail")) { try backend.complete(output) }
        #expect(try backend.retired() == [])
        #expect(try ReplayStore(database: backend.connection).examples().count == 40, "the refused completion deleted examples")
        // Run again, the step lists and retires v4 with the rest.
        let again = try backend.prune(retire: true)
        #expect(again.registry["retired"] == .array([.string("mail/v1"), .string("mail/v2"), .string("mail/v4")]))
        try backend.complete(again)
        #expect(try backend.retired() == ["v1", "v2", "v4"])
    }
}
