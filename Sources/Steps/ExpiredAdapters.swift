import AdaptCore
import Registry

/// What TTL expiry does to the adapter versions trained on the text it deletes.
///
/// A version's weights carry what its whole `trained_from` chain trained on, so every version trained on a snapshot
/// that held an expired example, and every version started from one of them at any remove, still carries that text
/// after the rows and snapshots are gone. The prune step lists them (its output's `registry` section and an event:
/// version names and counts, never text) and, when its pipeline says `prune.ttl_retires_adapters`, retires them in
/// its completion transaction the way `data forget --retire-adapters` does.
struct ExpiredAdapters: Equatable {
    /// Every version carrying expired text, in registration order (already retired ones included).
    var trainedOn: [AdapterVersion]
    /// What retiring them did; nil when the pipeline keeps them.
    var retirement: AdapterRegistry.Retirement?

    /// The fixed words recorded as the retired versions' reason.
    static let reason = "trained on expired examples"

    /// Lists (and with `retire`, retires) the versions trained on `snapshots`, in the caller's transaction on
    /// `registry`'s connection.
    static func apply(_ registry: AdapterRegistry, snapshots: Set<Digest>, retire: Bool) throws -> ExpiredAdapters {
        let trainedOn = try registry.versions(trainedOn: snapshots).sorted { $0.id < $1.id }
        guard retire, !trainedOn.isEmpty else { return ExpiredAdapters(trainedOn: trainedOn, retirement: nil) }
        return ExpiredAdapters(trainedOn: trainedOn,
                               retirement: try registry.retire(trainedOn, reason: reason, actor: ShortIdentifier("expiry")!))
    }

    /// Whether `other` lists and retires the same versions and moves the same pointers (the dates of the
    /// retirement aside, which are taken when each ran).
    func hasTheSameEffect(as other: ExpiredAdapters) -> Bool {
        func moves(_ x: ExpiredAdapters) -> [[Int64?]] {
            (x.retirement?.moves ?? []).map { [$0.from?.id, $0.to?.id] }
        }
        return trainedOn.map(\.id) == other.trainedOn.map(\.id)
            && trainedOn.map(\.isRetired) == other.trainedOn.map(\.isRetired)
            && (retirement?.retired ?? []).map(\.id) == (other.retirement?.retired ?? []).map(\.id)
            && moves(self) == moves(other)
    }

    /// The lineages whose active pointer moved.
    var movedLineages: [ShortIdentifier] {
        (retirement?.moves ?? []).map(\.lineage).sorted()
    }

    /// The job output's `registry` section: version names, shown and never compared by replay (they depend on the
    /// registry's whole history, not on the run's inputs).
    var registrySection: [String: JSONValue] {
        let retiredNow = Set((retirement?.retired ?? []).map(\.id))
        return [
            "trained_on_expired": .array(trainedOn.map { .string($0.reference.description) }),
            "retired": .array(trainedOn.filter { retiredNow.contains($0.id) }.map { .string($0.reference.description) }),
            "active_moves": .array((retirement?.moves ?? []).map { move in
                .object(["lineage": .string(move.lineage.value), "from": move.from.map { .string($0.name) } ?? .null,
                         "to": move.to.map { .string($0.name) } ?? .null])
            }),
        ]
    }

    /// The event sentence: counts and version names only.
    func sentence(lineage: String, retiring: Bool) -> String? {
        guard !trainedOn.isEmpty else { return nil }
        let names = trainedOn.map { $0.reference.description }.joined(separator: ", ")
        let head = "expired examples of \(lineage) were trained on by \(trainedOn.count) adapter version(s) (their trained_from chain): \(names)"
        guard retiring else {
            return head + "; kept, as prune.ttl_retires_adapters is off"
        }
        let retired = retirement?.retired.count ?? 0
        let moves = (retirement?.moves ?? []).map { "\($0.lineage) \($0.from?.name ?? "base") → \($0.to?.name ?? "base")" }
        return head + "; \(retired) retired with this step's completion"
            + (moves.isEmpty ? "" : ", active pointer " + moves.joined(separator: ", "))
    }
}
