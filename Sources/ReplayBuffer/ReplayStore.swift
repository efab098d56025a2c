import AdaptCore
import Foundation
import Storage

/// The replay buffer in the state database (SQLite) or a PostgreSQL database: import, list, stats, forget, policy.
///
/// Every change is one transaction; examples are scrubbed before they reach a statement. The SQL is written once
/// for both backends (`SQLConnection`); the few places they differ branch on the connection's dialect.
public struct ReplayStore: Sendable {
    public let database: any SQLConnection
    public let clock: any Clock

    /// Opens the buffer on `database`, migrating the `replay` schema component of its backend.
    public init(database: any SQLConnection, clock: any Clock = SystemClock()) throws {
        self.database = database
        self.clock = clock
        try ReplaySchema.migrate(database)
    }

    // MARK: Import

    /// Imports JSONL (see `JSONLReader` for the formats) into `lineage`.
    ///
    /// All or nothing: when a line is bad and `options.skipBad` is false, nothing is stored and the report has
    /// `committed == false` and the problems. Re-importing a line that is already stored counts as a duplicate.
    public func importJSONL(_ data: Data, lineage: String, options: ImportOptions = ImportOptions()) throws -> ImportReport {
        try LineageName.validate(lineage)
        let (records, problems) = options.reader.read(data)
        var report = Self.uncommittedReport(lineage: lineage, records: records, problems: problems, options: options)
        if !problems.isEmpty && !options.skipBad { return report }
        report.skipped = problems.count
        try add(records, lineage: lineage, options: options, report: &report)
        report.committed = true
        return report
    }

    /// The report of an import of `data` refused for its bad lines (all or nothing, no `skipBad`), or nil when the
    /// import would store something: reads the lines without a database, so a caller can refuse a file before it
    /// creates a state to hold it.
    public static func refusedImport(_ data: Data, lineage: String, options: ImportOptions = ImportOptions()) -> ImportReport? {
        let (records, problems) = options.reader.read(data)
        guard !problems.isEmpty, !options.skipBad else { return nil }
        return uncommittedReport(lineage: lineage, records: records, problems: problems, options: options)
    }

    private static func uncommittedReport(lineage: String, records: [ImportRecord], problems: [LineProblem],
                                          options: ImportOptions) -> ImportReport {
        ImportReport(lineage: lineage, records: records.count + problems.count, imported: 0, duplicates: 0,
                     skipped: 0, committed: false, problems: problems, scrubbed: ScrubCounts(), heldOut: 0,
                     tokensEstimated: !options.tokenCounter.isExact)
    }

    /// Stores already-parsed records (scrubbing them first) in one transaction.
    func add(_ records: [ImportRecord], lineage: String, options: ImportOptions, report: inout ImportReport) throws {
        try LineageName.validate(lineage)
        let now = clock.nowMilliseconds()
        let pipeline = options.scrubber
        var counts = ScrubCounts()
        func clean(_ text: String) -> String {
            let (scrubbed, found) = pipeline.scrub(text)
            counts.add(found)
            return scrubbed
        }
        var truncated = 0, dropped = 0
        let result: (imported: Int, duplicates: Int, heldOut: Int, readiness: GateReadiness) = try database.replayTransaction {
            try LineageTable.ensure(database, lineage: lineage, now: now)
            let policy = try LineageTable.policy(database, lineage: lineage)
            let importID = try ImportTable.start(database, lineage: lineage, now: now)
            let ttl = Int64(policy.ttlDays) * 86_400_000
            var imported = 0, duplicates = 0, heldOut = 0
            for record in records {
                // Every turn is scrubbed before anything is derived from it (a single exchange's fields are its turns).
                var turns = record.turns.map { $0.map { Turn(role: $0.role, content: clean($0.content)) } }
                    ?? Conversation.turns(system: record.system.map(clean), prompt: clean(record.prompt),
                                          completion: clean(record.completion))
                let source = clean(record.source ?? options.source)
                if let maxLength = options.maxLength {
                    let cut = Conversation.truncated(turns, maxTokens: maxLength) { options.tokenCounter.count($0.content) }
                    if cut.dropped > 0 {
                        (turns, truncated, dropped) = (cut.turns, truncated + 1, dropped + cut.dropped)
                    }
                }
                guard let (system, prompt, completion) = Conversation.lastExchange(turns) else {
                    preconditionFailure("the reader and the truncation keep a final assistant turn after a user turn")
                }
                // A single exchange is stored as it always was (same id, same row), so earlier runs replay equal.
                let whole = Conversation.isSingleExchange(turns) ? nil : turns
                let id = whole.map { ExampleID.make(lineage: lineage, turns: $0, source: source) }
                    ?? ExampleID.make(lineage: lineage, system: system, prompt: prompt, completion: completion, source: source)
                let tokens = whole.map { options.tokenCounter.count(turns: $0) }
                    ?? options.tokenCounter.count(system: system, prompt: prompt, completion: completion)
                let split = options.heldOut ? .heldOut : HeldOutSplit.initialSplit(id: id, fraction: policy.heldOutFraction)
                let row = ExampleTable.NewRow(
                    id: id, lineage: lineage, system: system, prompt: prompt, completion: completion, turns: whole,
                    source: source, weight: record.weight ?? 1, tokenCount: tokens,
                    tokenCountExact: options.tokenCounter.isExact, split: split, heldOutKey: HeldOutSplit.key(id: id),
                    createdAt: now, expiresAt: now + ttl, importID: importID)
                if try ExampleTable.insert(database, row) {
                    imported += 1
                    if split == .heldOut { heldOut += 1 }
                } else {
                    duplicates += 1
                }
            }
            heldOut += try HeldOutSplit.topUp(database, lineage: lineage, policy: policy, gateMinimum: options.gateMinimum,
                                              preferringImport: importID)
            try ImportTable.finish(database, id: importID, records: report.records, imported: imported,
                                   duplicates: duplicates, skipped: report.skipped, scrubbed: counts)
            let readiness = GateReadiness(heldOut: try ExampleTable.count(database, lineage: lineage, split: .heldOut),
                                          minPairs: max(policy.minHeldOut, options.gateMinimum))
            return (imported, duplicates, heldOut, readiness)
        }
        report.gateReadiness = result.readiness
        report.imported += result.imported
        report.duplicates += result.duplicates
        report.heldOut += result.heldOut
        report.scrubbed.add(counts)
        report.truncatedConversations += truncated
        report.turnsDropped += dropped
    }

    // MARK: Reading

    /// Examples, oldest first, optionally of one lineage and one split.
    public func examples(lineage: String? = nil, split: Split? = nil) throws -> [Example] {
        if let lineage { try LineageName.validate(lineage) }
        return try ExampleTable.list(database, lineage: lineage, split: split)
    }

    public func lineages() throws -> [String] { try LineageTable.names(database) }

    /// Counts per lineage (every lineage when `lineage` is nil), with whether the gate can judge it when it
    /// needs `gateMinimum` pairs (raised to the lineage's `min_held_out`).
    /// A lineage nothing was ever stored for (no import, no policy) has no row: nothing is made up for it.
    public func stats(lineage: String? = nil, gateMinimum: Int = 0) throws -> [LineageStats] {
        let known = try lineages()
        let names = try lineage.map { name -> [String] in
            try LineageName.validate(name)
            return known.contains(name) ? [name] : []
        } ?? known
        return try names.map { name in
            let policy = try LineageTable.policy(database, lineage: name)
            let row = try ExampleTable.aggregates(database, lineage: name)
            let totals = try ImportTable.totals(database, lineage: name)
            return LineageStats(
                lineage: name, examples: row?.int("examples") ?? 0, train: row?.int("train") ?? 0,
                heldOut: row?.int("held_out") ?? 0,
                spent: try ExampleTable.spentCount(database, lineage: name, maxUses: policy.maxUsesPerExample, excludingNight: ""),
                tokens: row?.int("tokens") ?? 0, tokenCountsEstimated: row?.int("estimated") ?? 0,
                oldestCreatedAt: row?.int64("oldest"), newestCreatedAt: row?.int64("newest"),
                nextExpiry: row?.int64("next_expiry"), imports: totals.imports, scrubbed: totals.scrubbed,
                nightsSampled: try UseTable.nights(database, lineage: name), policy: policy,
                gateReadiness: GateReadiness(heldOut: row?.int("held_out") ?? 0, minPairs: max(policy.minHeldOut, gateMinimum)),
                quarantined: row?.int("quarantined") ?? 0)
        }
    }

    // MARK: Erasure

    /// Deletes what `request` names (with its recorded uses) and every blob that held a copy of it, and
    /// returns how many examples went. See `erase` for the whole report.
    public func forget(_ request: ForgetRequest, blobs: (any BlobStorage)? = nil) throws -> Int {
        try erase(request, blobs: blobs).examples
    }

    /// Erases what `request` names from every place it was copied to, in one operation: the rows (on SQLite
    /// overwritten in the database file, `PRAGMA secure_delete`), the snapshot blobs that held them (marked erased
    /// in the same transaction, their files deleted right after it commits; without a blob store, by the next
    /// erasure or `adapt gc`), and the deleted text left in the database's files (`purgeDeletedText`).
    public func erase(_ request: ForgetRequest, because reason: ErasureReason = .forget, blobs: (any BlobStorage)? = nil) throws -> ErasureReport {
        var report = try Self.securely(database) { try eraseRows(request, because: reason) }
        if let blobs { report.freedBytes = try sweepErasedBlobs(blobs) }
        if report.examples > 0 {
            let purged = purgeDeletedText()
            switch database.dialect {
            case .sqlite: report.walTruncated = purged
            case .postgres: report.tablesRewritten = purged
            }
        }
        return report
    }

    /// The one example id that starts with `prefix`: a whole id, or the 12 characters `adapt data list` shows.
    /// Throws `ReplayError.invalidExampleID` for text that cannot start an id (ids are 32 lowercase hex
    /// characters; at least `minimumIDPrefix` are needed so a typo does not erase a stranger),
    /// `.noSuchExample` when nothing matches and `.ambiguousExampleID` with the count when several do.
    public func exampleID(matching prefix: String) throws -> String {
        let text = prefix.lowercased()
        guard (Self.minimumIDPrefix...32).contains(text.utf8.count),
              text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw ReplayError.invalidExampleID(prefix)
        }
        let matches = try ExampleTable.ids(database, startingWith: text, limit: 2)
        switch matches.count {
        case 0: throw ReplayError.noSuchExample(prefix)
        case 1: return matches[0]
        default: throw ReplayError.ambiguousExampleID(prefix, matches: try ExampleTable.count(database, idsStartingWith: text))
        }
    }

    /// The shortest id prefix `exampleID(matching:)` accepts.
    public static let minimumIDPrefix = 8

    /// Runs `body` with SQLite's secure_delete on, restoring the previous setting afterwards. PostgreSQL has no
    /// such setting (a deleted row stays in its page until the table is vacuumed): there `body` runs as it is,
    /// and `purgeDeletedText` after the commit does the rest.
    public static func securely<T>(_ db: any SQLConnection, _ body: () throws -> T) throws -> T {
        guard db.dialect == .sqlite else { return try body() }
        let previous = try db.scalar("PRAGMA secure_delete").integerValue ?? 0
        try db.execute("PRAGMA secure_delete = ON")
        defer { try? db.execute("PRAGMA secure_delete = \(previous)") }
        return try body()
    }

    // MARK: Policy

    public func policy(lineage: String) throws -> LineagePolicy {
        try LineageName.validate(lineage)
        return try LineageTable.policy(database, lineage: lineage)
    }

    /// Changes the settings of `lineage` (creating its row). A new TTL moves the expiry of every stored example;
    /// a new held-out fraction applies to examples stored from now on; a new minimum tops the held-out set up
    /// (`HeldOutSplit.Rule.current`).
    @discardableResult
    public func setPolicy(lineage: String, _ change: (inout LineagePolicy) -> Void) throws -> LineagePolicy {
        try LineageName.validate(lineage)
        let now = clock.nowMilliseconds()
        return try database.replayTransaction {
            var policy = try LineageTable.policy(database, lineage: lineage)
            let before = policy
            change(&policy)
            try policy.validate()
            try LineageTable.write(database, lineage: lineage, policy: policy, now: now)
            if policy.ttlDays != before.ttlDays {
                try ExampleTable.reschedule(database, lineage: lineage, ttlMilliseconds: Int64(policy.ttlDays) * 86_400_000)
            }
            try HeldOutSplit.topUp(database, lineage: lineage, policy: policy)
            return policy
        }
    }

    /// Replaces the stored token counts of `lineage` with `counter`'s (e.g. once the model's tokenizer is
    /// available); returns how many examples were recounted.
    @discardableResult
    public func recountTokens(lineage: String, counter: any TokenCounter) throws -> Int {
        try database.replayTransaction {
            let rows = try ExampleTable.list(database, lineage: lineage, split: nil)
            for example in rows {
                let count = example.turns.map { counter.count(turns: $0) }
                    ?? counter.count(system: example.system, prompt: example.prompt, completion: example.completion)
                try ExampleTable.setTokenCount(database, id: example.id, count: count, exact: counter.isExact)
            }
            return rows.count
        }
    }
}

/// What `forget` erases.
public enum ForgetRequest: Sendable, Equatable {
    case id(String)
    /// Several whole ids, erased together in one transaction.
    case ids([String])
    /// Every example with this source, in one lineage or in all.
    case source(String, lineage: String?)
}
