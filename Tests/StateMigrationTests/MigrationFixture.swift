import AdaptCore
import Foundation
import JobQueue
import Registry
import ReplayBuffer
import Storage
import TestSupport

/// A state directory holding some of everything `adapt migrate` copies: a finished run (jobs, dependencies,
/// events), registry versions with a promotion and a rollback, replay examples in both splits, and blobs (the
/// adapters and one more); with `waitingRun`, also a run whose first step is ready to claim.
struct MigrationFixture {
    let directory = TemporaryDirectory("migrate-test")
    var state: StateDirectory { directory.state }
    static let lineage = ShortIdentifier("mail")!

    init(waitingRun: Bool = false) throws {
        try directory.state.create()
        let database = try Database(path: state.database.path, durability: .normal)
        let clock = ManualClock()

        let queue = try JobQueue(database: database, clock: clock)
        _ = try queue.enqueue(RunDescription(kind: "nightly", uniqueKey: "mail/2026-12-01", manifest: .object(["lineage": .string("mail")]), steps: [
            .init(name: "prune", kind: "prune"),
            .init(name: "train", kind: "train", dependsOn: ["prune"]),
        ]))
        while let claim = try queue.claim(kinds: ["prune", "train"], owner: "host-a", leaseMilliseconds: 60_000) {
            clock.advance(milliseconds: 250)
            try queue.complete(claim, output: .object(["steps": .int(3), "loss": .double(0.125)]))
        }

        if waitingRun {
            _ = try queue.enqueue(RunDescription(kind: "nightly", steps: [.init(name: "sample", kind: "sample")]))
        }

        let replay = try ReplayStore(database: database, clock: clock)
        var options = ImportOptions()
        options.heldOut = true
        _ = try replay.importJSONL(Self.lines(0..<4), lineage: "mail", options: options)
        // More rows than one insert statement takes (200), so the copy writes this table in batches.
        _ = try replay.importJSONL(Self.lines(4..<254), lineage: "mail")

        let registry = try AdapterRegistry(database: database, blobs: state.blobs, clock: clock)
        let versions = try (0..<3).map { i in
            clock.advance(milliseconds: 1000)
            return try registry.register(adapterData: Data("adapter \(i)".utf8) + Data(repeating: UInt8(i), count: 300),
                                         lineage: Self.lineage, metadata: AdapterMetadata(trainingExamples: 10 + i),
                                         metrics: Self.better)
        }
        try Self.promoteScored(versions[0], in: registry)
        try Self.promoteScored(versions[2], in: registry)
        _ = try registry.rollback(lineage: Self.lineage)
        _ = try state.blobs.put(Data(repeating: 7, count: 3000))
    }

    /// The held-out snapshot the fixture's engine gate reports name.
    static let heldOut = Digest.sha256("mail held-out snapshot")

    /// An engine gate report saying `better` against the version active now, then a promotion by the gate: the
    /// rows `adapt eval` and `registry promote` leave.
    static func promoteScored(_ version: AdapterVersion, in registry: AdapterRegistry) throws {
        let active = try registry.active(lineage: version.lineage)
        try registry.recordGateReport(EngineGateReport(
            versionID: version.id, adapterDigest: version.adapterDigest, heldOutDigest: heldOut, incumbentVersionID: active?.id,
            incumbentDigest: active?.adapterDigest, outcome: .better, report: .object(["outcome": .string("better")]),
            maker: .evalCommand, madeAt: registry.clock.nowMilliseconds()))
        try registry.promote(version.reference, heldOut: heldOut)
    }

    static let better = VersionMetrics(gate: GateSummary(
        outcome: .better, n: 40, statistic: 120, pValue: 0.001, method: ShortIdentifier("approx")!,
        zeroMethod: ShortIdentifier("wilcox")!, alternative: ShortIdentifier("less")!, medianDifference: -0.02,
        effectSize: -0.5, alpha: 0.05))

    static func lines(_ range: Range<Int>) -> Data {
        Data(range.map { "{\"prompt\":\"question \($0)\",\"completion\":\"answer \($0) with a few words\"}" }
            .joined(separator: "\n").utf8)
    }
}
