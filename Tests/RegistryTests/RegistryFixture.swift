import AdaptCore
import Foundation
import Registry
import Storage
import TestSupport

/// A fresh state directory with an open registry on a manual clock.
final class RegistryFixture: @unchecked Sendable {  // immutable after init
    let dir = TemporaryDirectory("registry")
    let clock = ManualClock()
    let database: Database
    let registry: AdapterRegistry

    init() throws {
        try dir.state.create()
        database = try Database(path: dir.state.database.path)
        registry = try AdapterRegistry(database: database, blobs: dir.state.blobs, clock: clock)
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
