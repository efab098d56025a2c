import AdaptCore
import Storage

/// Promotion and rollback: the active pointer and its history, moved together in one transaction.
extension AdapterRegistry {
    /// The result of a promotion or rollback; `move` is nil when the target was already active.
    public struct PointerChange: Sendable, Equatable {
        public let lineage: ShortIdentifier
        public let from: AdapterVersion?
        public let to: AdapterVersion?
        public let move: PointerMove?
        /// What a forced promotion bypassed, nil when nothing was.
        public let bypassed: String?
    }

    /// Makes `reference` the active version of its lineage.
    ///
    /// With `.gate` the version's newest engine gate report must approve it now (`GateApproval`): made for its
    /// adapter digest, on `heldOut` (the lineage's current held-out snapshot digest, which the caller reads from
    /// the replay buffer), against the version active now, with outcome `better`. `.force` skips that check and
    /// records what it bypassed. Either way the adapter file is verified first: a missing or corrupt file
    /// refuses the promotion and changes nothing. Runs in one transaction (a savepoint inside the caller's), so
    /// the pointer and its history row commit together with whatever else the caller does.
    @discardableResult
    public func promote(_ reference: VersionReference, reason: PointerMoveReason = .gate, heldOut: Digest? = nil,
                        actor: ShortIdentifier = ShortIdentifier("cli")!) throws -> PointerChange {
        precondition(reason != .rollback, "use rollback(lineage:) to roll back")
        return try connection.transaction {
            let resolved = try version(reference)
            try lockLineage(resolved.lineage)
            // Read again under the lineage's lock: another host may have retired it in between.
            let target = try version(id: resolved.id)
            guard !target.isRetired else {
                throw RegistryError.versionRetired(lineage: target.lineage.value, version: target.name)
            }
            guard try !prunedIDs().contains(target.id) else {
                throw RegistryError.versionPruned(lineage: target.lineage.value, version: target.name)
            }
            _ = try adapterData(target)
            let current = try active(lineage: target.lineage)
            var bypassed: String? = nil
            if current?.id != target.id,
               let refusal = GateApproval.refusal(of: target, report: try latestGateReport(of: target), active: current, heldOut: heldOut) {
                guard reason == .force else {
                    throw RegistryError.notApprovedByGate(lineage: target.lineage.value, version: target.name, reason: refusal)
                }
                bypassed = "the gate (\(refusal); promotion requires the engine's 'better' report on the current held-out set)"
            }
            guard current?.id != target.id else {
                return PointerChange(lineage: target.lineage, from: current, to: target, move: nil, bypassed: nil)
            }
            let move = try flip(target.lineage, from: current, to: target, reason: reason, bypassed: bypassed, actor: actor)
            return PointerChange(lineage: target.lineage, from: current, to: target, move: move, bypassed: bypassed)
        }
    }

    /// `promote` on the caller's connection, for use inside the caller's `db.transaction { }`.
    @discardableResult
    public func promote(_ reference: VersionReference, reason: PointerMoveReason = .gate, heldOut: Digest? = nil,
                        actor: ShortIdentifier = ShortIdentifier("pipeline")!, in connection: any SQLConnection) throws -> PointerChange {
        try on(connection).promote(reference, reason: reason, heldOut: heldOut, actor: actor)
    }

    /// Moves `lineage` back to the version that was active before the current one was promoted (following
    /// promotions, not earlier rollbacks, so repeated rollbacks walk back through the promotion chain), or
    /// to the base model when there was none. The target's file is verified first.
    @discardableResult
    public func rollback(lineage: ShortIdentifier, actor: ShortIdentifier = ShortIdentifier("cli")!) throws -> PointerChange {
        try connection.transaction {
            guard try connection.queryOne("SELECT 1 FROM registry_versions WHERE lineage = ?", lineage.value) != nil else {
                throw RegistryError.unknownLineage(lineage.value)
            }
            try lockLineage(lineage)
            guard let current = try active(lineage: lineage) else {
                throw RegistryError.nothingToRollBack(lineage: lineage.value)
            }
            // A retired version is passed over: the walk goes on to the one active before it. A pruned one has no
            // file: the walk stops there with a clear refusal (prune never deletes the active version's chain, so
            // only a chain changed by a forced promotion reaches one).
            var target = try promotedFrom(current, lineage: lineage)
            var seen: Set<Int64> = [current.id]
            while let candidate = target, candidate.isRetired, seen.insert(candidate.id).inserted {
                target = try promotedFrom(candidate, lineage: lineage)
            }
            if target?.isRetired == true { target = nil }
            if let target, try prunedIDs().contains(target.id) {
                throw RegistryError.versionPruned(lineage: target.lineage.value, version: target.name)
            }
            if let target { _ = try adapterData(target) }
            let move = try flip(lineage, from: current, to: target, reason: .rollback, bypassed: nil, actor: actor)
            return PointerChange(lineage: lineage, from: current, to: target, move: move, bypassed: nil)
        }
    }

    @discardableResult
    public func rollback(lineage: ShortIdentifier, actor: ShortIdentifier = ShortIdentifier("pipeline")!,
                         in connection: any SQLConnection) throws -> PointerChange {
        try on(connection).rollback(lineage: lineage, actor: actor)
    }

    /// The version that was active before `version` was last promoted (not rolled back to), nil for the base model.
    private func promotedFrom(_ version: AdapterVersion, lineage: ShortIdentifier) throws -> AdapterVersion? {
        let previousID = try connection.queryOne(
            "SELECT from_version_id FROM registry_history WHERE lineage = ? AND to_version_id = ? "
                + "AND reason NOT IN ('rollback', 'retire') ORDER BY id DESC LIMIT 1",
            lineage.value, version.id)?.int64("from_version_id")
        return try previousID.map { try self.version(id: $0) }
    }

    /// The history row and the pointer update; callers hold the transaction. The row goes first: the database
    /// lets the pointer move only to the version the lineage's last move names.
    func flip(_ lineage: ShortIdentifier, from: AdapterVersion?, to: AdapterVersion?, reason: PointerMoveReason,
              bypassed: String?, actor: ShortIdentifier) throws -> PointerMove {
        let now = clock.nowMilliseconds()
        guard let row = try connection.queryOne(
            "INSERT INTO registry_history (lineage, from_version_id, to_version_id, reason, bypassed, actor, at) "
                + "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING \(PointerMove.columns)",
            lineage.value, from?.id, to?.id, reason.rawValue, bypassed, actor.value, now) else {
            throw RegistryError.corruptRow(table: "registry_history", reason: "the new move's row was not returned")
        }
        try connection.run(
            "INSERT INTO registry_active (lineage, version_id, updated_at) VALUES (?, ?, ?) "
                + "ON CONFLICT (lineage) DO UPDATE SET version_id = excluded.version_id, updated_at = excluded.updated_at",
            lineage.value, to?.id, now)
        return try PointerMove(row: row)
    }
}
