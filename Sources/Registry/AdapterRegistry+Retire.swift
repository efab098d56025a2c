import AdaptCore
import Storage

/// Retirement: versions trained on erased text stay registered (their files are never rewritten) but can no
/// longer be made active.
extension AdapterRegistry {
    /// What `retire` did.
    public struct Retirement: Sendable, Equatable {
        /// The versions retired now (already retired ones are not repeated).
        public var retired: [AdapterVersion] = []
        /// Pointer moves off a retired active version, one per lineage that needed one.
        public var moves: [PointerChange] = []
    }

    /// Versions (of any lineage) whose recorded training dataset is one of `datasets`: the adapters trained on
    /// a snapshot (`AdapterMetadata.dataset`, the sample step's training snapshot the train step read).
    ///
    /// A version's weights carry what its whole `trained_from` chain trained on, so every version that started from
    /// one of those weights (at any remove) is listed too.
    public func versions(trainedOn datasets: Set<Digest>) throws -> [AdapterVersion] {
        guard !datasets.isEmpty else { return [] }
        let all = try versions()
        var tainted = Set(all.filter { $0.metadata.dataset.map(datasets.contains) ?? false }.map(\.id))
        // Versions are numbered in registration order and a weights parent is registered before its children,
        // so one pass in id order reaches every descendant.
        for version in all.sorted(by: { $0.id < $1.id }) {
            if let parent = version.trainedFromID, tainted.contains(parent) { tainted.insert(version.id) }
        }
        return all.filter { tainted.contains($0.id) }
    }

    /// Retires `targets` in one transaction (a savepoint inside the caller's). A lineage whose active version is
    /// retired moves to its newest version that is not retired and was once active (so approved by the gate
    /// or by a person), or to the base model; the move is recorded with reason `retire`.
    @discardableResult
    public func retire(_ targets: [AdapterVersion], reason: String,
                       actor: ShortIdentifier = ShortIdentifier("cli")!) throws -> Retirement {
        try connection.transaction {
            var result = Retirement()
            let now = clock.nowMilliseconds()
            let lineages = Set(targets.map(\.lineage)).sorted()
            for lineage in lineages { try lockLineage(lineage) }  // in one order, so two retirements cannot deadlock
            for target in targets {
                let changed = try connection.run(
                    "UPDATE registry_versions SET retired_at = ?, retired_reason = ? WHERE id = ? AND retired_at IS NULL",
                    now, reason, target.id)
                if changed == 1 { result.retired.append(try version(id: target.id)) }
            }
            for name in lineages {
                guard let current = try active(lineage: name), current.isRetired else { continue }
                let replacement = try connection.queryOne("""
                    SELECT v.id FROM registry_versions v
                    WHERE v.lineage = ? AND v.retired_at IS NULL
                      AND EXISTS (SELECT 1 FROM registry_history h WHERE h.to_version_id = v.id)
                    ORDER BY v.number DESC LIMIT 1
                    """, name.value)?.int64("id").map { try version(id: $0) }
                    .flatMap { (try? adapterData($0)) != nil ? $0 : nil }  // a missing file: the base model instead
                let move = try flip(name, from: current, to: replacement, reason: .retire, bypassed: nil, actor: actor)
                result.moves.append(PointerChange(lineage: name, from: current, to: replacement, move: move, bypassed: nil))
            }
            return result
        }
    }
}
