import AdaptCore
import Foundation
import Registry
import Storage
import TestSupport

/// An open registry on a manual clock, over a fresh database of either backend: a state directory's SQLite file
/// and blob files, or a new database in the test process's throwaway PostgreSQL cluster with its blobs in it.
final class RegistryFixture: @unchecked Sendable {  // immutable after init
    let backend: Backend
    let dir = TemporaryDirectory("registry")
    let clock = ManualClock()
    let connection: any SQLConnection
    let blobs: any BlobStorage
    let registry: AdapterRegistry
    /// The PostgreSQL database's connection string, nil on SQLite.
    let target: String?

    init(_ backend: Backend = .sqlite) throws {
        self.backend = backend
        try dir.state.create()
        switch backend {
        case .sqlite:
            connection = try Database(path: dir.state.database.path)
            blobs = dir.state.blobs
            target = nil
        case .postgres:
            let target = try PostgresCluster.shared().makeDatabase()
            let server = try PostgresConnection(target)
            connection = server
            blobs = try PostgresBlobStore(connection: server, clock: clock)
            self.target = target
        }
        registry = try AdapterRegistry(connection: connection, blobs: blobs, clock: clock)
    }

    /// The same registry through a connection of its own, as another process (or host) would open it.
    func secondRegistry() throws -> AdapterRegistry {
        switch backend {
        case .sqlite:
            return try AdapterRegistry(database: try Database(path: dir.state.database.path), blobs: dir.state.blobs)
        case .postgres:
            let server = try PostgresConnection(target!)
            return try AdapterRegistry(connection: server, blobs: try PostgresBlobStore(connection: server))
        }
    }

    /// Replaces the stored bytes of `digest` with others, as a bad disk or a hand edit would.
    func damageBlob(_ digest: Digest) throws {
        switch backend {
        case .sqlite: try Data("garbage".utf8).write(to: dir.state.blobs.url(for: digest))
        case .postgres: try connection.run("UPDATE blob_chunks SET bytes = ? WHERE digest = ?", Data("garbage".utf8), digest)
        }
    }

    func deleteBlob(_ digest: Digest) throws {
        switch backend {
        case .sqlite: try FileManager.default.removeItem(at: dir.state.blobs.url(for: digest))
        case .postgres: try connection.run("DELETE FROM blobs WHERE digest = ?", digest)
        }
    }

    static let lineage = ShortIdentifier("mail")!

    static func gate(_ outcome: GateSummary.Outcome) -> VersionMetrics {
        VersionMetrics(gate: GateSummary(outcome: outcome, n: 40, statistic: 120, pValue: outcome == .better ? 0.001 : 0.4,
                                         method: ShortIdentifier("approx")!, zeroMethod: ShortIdentifier("wilcox")!,
                                         alternative: ShortIdentifier("less")!, medianDifference: -0.02, effectSize: -0.5,
                                         alpha: 0.05))
    }

    /// Registers `count` versions of distinct random-looking bytes with the given gate outcome.
    @discardableResult
    func register(_ count: Int, outcome: GateSummary.Outcome = .better, lineage: ShortIdentifier = RegistryFixture.lineage) throws -> [AdapterVersion] {
        try (0..<count).map { i in
            clock.advance(milliseconds: 1000)
            let bytes = Data("adapter \(lineage) \(i) \(clock.nowMilliseconds())".utf8) + Data(repeating: UInt8(i & 0xff), count: 256)
            return try registry.register(adapterData: bytes, lineage: lineage, metadata: AdapterMetadata(trainingExamples: 10 + i),
                                         metrics: Self.gate(outcome))
        }
    }

    /// (active version number or nil, number of history rows) — what must not change after a refused operation.
    func snapshot(_ lineage: ShortIdentifier = RegistryFixture.lineage) throws -> (Int?, Int) {
        (try registry.active(lineage: lineage)?.number, try registry.history(lineage: lineage).count)
    }
}

extension RegistryFixture {
    /// The held-out snapshot digest the fixture's engine reports are made on and its promotions check.
    static let heldOut = Digest.sha256("mail held-out snapshot")
}

extension AdapterRegistry {
    /// What `adapt eval` leaves behind: an engine report with `outcome` for `reference`, against the version
    /// active now, on `heldOut`.
    func recordEngineReport(_ reference: VersionReference, outcome: GateSummary.Outcome = .better,
                            heldOut: Digest = RegistryFixture.heldOut) throws {
        let version = try version(reference)
        let active = try active(lineage: version.lineage)
        try recordGateReport(EngineGateReport(
            versionID: version.id, adapterDigest: version.adapterDigest, heldOutDigest: heldOut, incumbentVersionID: active?.id,
            incumbentDigest: active?.adapterDigest, outcome: outcome, report: .object(["outcome": .string(outcome.rawValue)]),
            maker: .evalCommand, madeAt: clock.nowMilliseconds()))
    }

    /// A promotion by the gate after the engine said `better` against the version active now.
    @discardableResult
    func promoteScored(_ reference: VersionReference, actor: ShortIdentifier = ShortIdentifier("cli")!,
                       in connection: (any SQLConnection)? = nil) throws -> PointerChange {
        let registry = connection.map { on($0) } ?? self
        try registry.recordEngineReport(reference)
        return try registry.promote(reference, heldOut: RegistryFixture.heldOut, actor: actor)
    }
}
