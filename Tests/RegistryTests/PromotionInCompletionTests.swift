import AdaptCore
import Foundation
import JobQueue
import Registry
import Storage
import Testing
import TestSupport

// The promote step's writes (the version, its adapter, the pointer flip) run in the job engine's completion
// hook, on the engine's own connection: they commit with the job's completion or not at all, on either backend.

/// A job engine on the fixture's database, sharing its clock.
private func engine(for f: RegistryFixture) throws -> any JobEngine {
    switch f.backend {
    case .sqlite: return try JobQueue(database: try Database(path: f.dir.state.database.path), clock: f.clock)
    case .postgres: return try PostgresJobQueue(connectionString: f.target!, clock: f.clock)
    }
}

/// Completes `claim` with a hook that registers `adapter` as the lineage's next version and promotes it.
private func completeByPromoting(_ engine: any JobEngine, _ claim: Claim, registry: AdapterRegistry, adapter: Data) throws {
    switch engine {
    case let queue as JobQueue: try complete(queue, claim, promotingWith: registry, adapter: adapter)
    case let queue as PostgresJobQueue: try complete(queue, claim, promotingWith: registry, adapter: adapter)
    default: Issue.record("an engine of another kind")
    }
}

private func complete<Engine: JobEngine>(_ engine: Engine, _ claim: Claim, promotingWith registry: AdapterRegistry,
                                         adapter: Data) throws where Engine.Connection: SQLConnection {
    try engine.complete(claim, output: .object([:]), alsoInTransaction: { connection in
        let registry = registry.on(connection)
        let version = try registry.register(adapterData: adapter, lineage: RegistryFixture.lineage,
                                            metadata: AdapterMetadata(), metrics: RegistryFixture.gate(.better))
        try registry.promoteScored(version.reference, actor: ShortIdentifier("pipeline")!)
    })
}

private func promoteJob(_ engine: any JobEngine) throws -> EnqueueResult {
    try engine.enqueue(RunDescription(kind: "nightly", uniqueKey: nil, steps: [
        RunDescription.Step(name: "promote", kind: "promote", input: .object([:]), dependsOn: [], maxAttempts: 3),
    ]))
}

@Test(arguments: Backend.allCases)
func theFlipCommitsWithTheJobsCompletion(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let engine = try engine(for: f)
    let run = try promoteJob(engine)
    let claim = try #require(try engine.claim(kinds: ["promote"], owner: "host-a/1", leaseMilliseconds: 5_000))
    let adapter = Data("tonight's adapter".utf8) + Data(repeating: 3, count: 300)
    try completeByPromoting(engine, claim, registry: f.registry, adapter: adapter)
    #expect(try engine.job(run.jobIDs[0]).state == .succeeded)
    let active = try #require(try f.registry.active(lineage: RegistryFixture.lineage))
    #expect(active.number == 1 && active.adapterDigest == Digest.sha256(adapter))
    #expect(try f.registry.adapterData(active) == adapter)
    #expect(try f.registry.history().map(\.actor.value) == ["pipeline"])
}

@Test(arguments: Backend.allCases)
func aWorkerThatLostItsLeaseRegistersAndFlipsNothing(_ backend: Backend) throws {
    let f = try RegistryFixture(backend)
    let engine = try engine(for: f)
    _ = try promoteJob(engine)
    let stale = try #require(try engine.claim(kinds: ["promote"], owner: "host-a/1", leaseMilliseconds: 1_000))
    f.clock.advance(milliseconds: 2_000)
    #expect(try engine.rescueExpiredLeases().count == 1)
    let adapter = Data("a late adapter".utf8) + Data(repeating: 5, count: 300)
    #expect(throws: (any Error).self) { try completeByPromoting(engine, stale, registry: f.registry, adapter: adapter) }
    #expect(try f.snapshot() == (nil, 0))
    #expect(try f.registry.versions().isEmpty)
    if backend == .postgres {
        // Its blob went in the same transaction, so it went with it.
        #expect(try !f.blobs.contains(Digest.sha256(adapter)))
    }
    // The job runs elsewhere, and that completion flips.
    let fresh = try #require(try engine.claim(kinds: ["promote"], owner: "host-b/1", leaseMilliseconds: 5_000))
    #expect(fresh.token == 2)
    try completeByPromoting(engine, fresh, registry: f.registry, adapter: adapter)
    #expect(try f.snapshot() == (1, 1))
}
