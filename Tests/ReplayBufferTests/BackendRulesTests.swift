import AdaptCore
import Foundation
import ReplayBuffer
import Storage
import Testing
import TestSupport

// The buffer keeps SQLite's rules on PostgreSQL: the same constraints, and writes from several hosts that run one
// after another as they do under SQLite's write lock.

/// The constraints hold on both backends: a row the schema forbids is refused, whatever wrote it.
@Test(arguments: Backend.allCases)
func theSchemaRefusesRowsItsConstraintsForbidOnEitherBackend(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(2)
    let db = fixture.store.database
    for statement in [
        "UPDATE replay_examples SET split = 'elsewhere'",
        "UPDATE replay_examples SET weight = 0",
        "UPDATE replay_examples SET completion = ''",
        "UPDATE replay_examples SET lineage = 'nobody'",
        "UPDATE replay_lineages SET held_out_fraction = 0.75",
        "INSERT INTO replay_uses (lineage, night, example_id, tokens, recorded_at) VALUES ('mail', 'n', 'missing', 1, 0)",
        "INSERT INTO replay_blobs (blob, kind, lineage, recorded_at) VALUES ('short', 'train_snapshot', 'mail', 0)",
        "INSERT INTO replay_blobs (blob, kind, lineage, recorded_at, erased_at) VALUES ('\(String(repeating: "a", count: 64))', 'train_snapshot', 'mail', 0, 1)",
    ] {
        #expect(throws: StorageError.self, "\(statement)") { try db.execute(statement) }
    }
    #expect(try fixture.store.examples().count == 2)
}

/// Two hosts writing one buffer at once: the advisory lock makes their transactions run one after another, as
/// SQLite's write lock does, so the held-out top-up of each sees the other's and the minimum is met exactly.
@Test func twoHostsImportingAtOnceFillTheHeldOutMinimumExactlyOnce() throws {
    let first = try BufferFixture(.postgres)
    let second = try ReplayStore(database: try PostgresConnection(try #require(first.connectionString)), clock: first.clock)
    let stores = [first.store, second]
    for round in 0..<8 {
        let lineage = "mail\(round)"
        try first.store.setPolicy(lineage: lineage) { $0.heldOutFraction = 0; $0.minHeldOut = 10 }
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { host in
            do {
                _ = try stores[host].importJSONL(BufferFixture.lines(12, from: host * 50), lineage: lineage)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try first.store.examples(lineage: lineage).count == 24)
        #expect(try first.store.examples(lineage: lineage, split: .heldOut).count == 10, "round \(round)")
    }
}

/// Each backend counts its own migrations (four on SQLite, one on PostgreSQL); reopening changes nothing and a
/// buffer written by a newer build is refused before anything is touched.
@Test(arguments: Backend.allCases)
func reopeningTheBufferKeepsItsRowsAndANewerSchemaIsRefused(_ backend: Backend) throws {
    let fixture = try BufferFixture(backend)
    try fixture.importLines(3)
    let (version, reopened): (Int, ReplayStore)
    switch backend {
    case .sqlite:
        let database = try Database(path: fixture.directory.state.database.path, durability: .normal)
        (version, reopened) = (try database.schemaVersion(of: "replay"), try ReplayStore(database: database))
    case .postgres:
        let connection = try PostgresConnection(try #require(fixture.connectionString))
        (version, reopened) = (try connection.schemaVersion(of: "replay"), try ReplayStore(database: connection))
    }
    #expect(version == (backend == .sqlite ? ReplaySchema.schema : ReplaySchema.postgresSchema).migrations.count)
    #expect(try reopened.examples().count == 3)

    try fixture.store.database.run("UPDATE adapt_schema SET version = version + 1 WHERE component = 'replay'")
    #expect(throws: StorageError.self) { try ReplayStore(database: fixture.store.database) }
    #expect(try fixture.store.examples().count == 3)
}
