import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt data …`: the replay buffer (import, list, stats, forget, policy, release).
enum DataCommands {
    static let all: [Command] = [importCommand, list, stats, forget, policy, release]

    /// Checked before any state is opened (a refused command creates nothing), and by the store as it writes;
    /// the read-only commands check `lineageFilter` before they open anything.
    static let lineage = Option<String?>("lineage", value: "L", help: "the lineage (e.g. mail)")
    static let lineageFilter = Option(lineage: "only this lineage")

    /// The replay buffer of `--database postgres://…` (or `ADAPT_DATABASE`), else of the state directory
    /// (created on first use).
    static func store(_ invocation: Invocation) throws -> DataService {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try DataService(postgres: url) }
        return try DataService(database: try GlobalOptions.database(invocation), state: try GlobalOptions.stateDirectory(invocation))
    }

    /// The replay buffer of a command that only changes what is stored (`forget`, `release`): on PostgreSQL, or
    /// the state directory's, which must exist (a mistyped --state is refused, not made into a new state).
    static func existingStore(_ invocation: Invocation) throws -> DataService {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try DataService(postgres: url) }
        return try DataService(database: try GlobalOptions.existingDatabase(invocation),
                               state: try GlobalOptions.stateDirectory(invocation))
    }

    /// The replay buffer of a command that only reads: on PostgreSQL, or the state directory's read-only (an
    /// error if the state does not exist).
    static func readingStore(_ invocation: Invocation) throws -> DataService {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try DataService(postgres: url) }
        return try DataService(database: try GlobalOptions.readOnlyDatabase(invocation),
                               state: try GlobalOptions.stateDirectory(invocation))
    }

    /// Lineage names and policy values are command-line input: a bad one is a usage error (exit 2).
    static func asUsage<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as ReplayError {
            switch error {
            case .invalidLineage, .invalidPolicy, .nothingToForget, .invalidExampleID: throw UsageError(error.description)
            default: throw error
            }
        }
    }

    // MARK: import

    static let importCommand = Command(
        "data import", summary: "import examples from a JSONL file (scrubbed before they are stored)",
        discussion: """
            Formats, one JSON object per line: {"prompt", "completion"}, mlx-lm chat {"messages": [{role, content}, …]}
            (every turn kept, in order; the last message must be the assistant's; training learns every assistant
            turn, held-out scoring judges the last one given the rest), or {"text"} (a completion with an empty
            prompt); each may add "source" and "weight" (from 0.000001 to 1000000).
            --max-length N: a conversation longer than N tokens (estimated at 4 bytes a token) loses its oldest
            turns, keeping its system message and its last exchange; the report counts the conversations cut.
            E-mail addresses, IBANs, card numbers and phone numbers become [EMAIL], [IBAN], [CARD], [PHONE].
            All or nothing: any bad line stops the import (exit 1) unless --skip-bad. A line already stored is a duplicate.
            """,
        options: [lineage, Import.skipBad, Import.heldOut, Import.source, Import.maxRecordBytes, Import.maxLength, .json],
        positionals: [PositionalSpec("FILE", help: "a JSONL file, or - for standard input")]
    ) { invocation in
        let args = invocation.arguments
        let lineage = try args.required(lineage)
        _ = try Lineage.option(lineage)  // a bad name is a usage error (2) before any state is created
        let path = try args.required("FILE")
        var options = ImportOptions(skipBad: args[Import.skipBad])
        options.heldOut = args[Import.heldOut]
        options.gateMinimum = gateMinimum
        options.source = try args[Import.source]
        options.reader.maxRecordBytes = try args[Import.maxRecordBytes]
        if let maxLength = try args[Import.maxLength] { options.maxLength = maxLength }
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            if FileManager.default.fileExists(atPath: path) { try RegularFile.requireReadable(URL(fileURLWithPath: path)) }
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw CoreError.fileUnreadable(path: path, reason: UnreadablePath.reason(path))
            }
            data = contents
        }
        // A file refused for its bad lines stores nothing: where no state exists yet, none is created for it (read
        // first only then, so an import into an existing state reads its file once).
        let firstImport = try GlobalOptions.postgresDatabase(invocation) == nil
            && !FileManager.default.fileExists(atPath: try GlobalOptions.stateDirectory(invocation).database.path)
        let refused = firstImport ? DataService.refusedImport(data, lineage: lineage, options: options) : nil
        let report = try refused ?? asUsage { try store(invocation).importJSONL(data, lineage: lineage, options: options) }

        for problem in report.problems {
            Console.error((report.committed ? "skipped " : "") + problem.description)
        }
        if args.flag("json") {
            Console.print(JSON.pretty(report))
        } else if report.committed {
            Console.print("imported \(report.imported) into \(lineage) (\(report.duplicates) duplicates, \(report.skipped) skipped, "
                          + "\(report.heldOut) held out); scrubbed \(describe(report.scrubbed))")
            if report.truncatedConversations > 0 {
                Console.print("\(report.truncatedConversations) conversation\(report.truncatedConversations == 1 ? "" : "s") cut to "
                              + "--max-length (\(report.turnsDropped) turn\(report.turnsDropped == 1 ? "" : "s") dropped)")
            }
            if let readiness = report.gateReadiness { Console.print(readinessLine(readiness)) }
        }
        if !report.committed {
            Console.error("adapt: nothing imported: \(report.problems.count) bad line\(report.problems.count == 1 ? "" : "s"); "
                          + "fix \(report.problems.count == 1 ? "it" : "them") or pass --skip-bad")
            throw ExitCode.failure
        }
    }

    /// The options of `data import`.
    enum Import {
        static let skipBad = Flag("skip-bad", help: "import the good lines and report the bad ones")
        static let heldOut = Flag("held-out", help: "put every new example in the held-out split (never trained on), not the hash's choice")
        static let source = Option("source", value: "S", default: ImportOptions().source,
                                   defaultHelp: ImportOptions().source, help: "source recorded for lines that name none") { source in
            guard !source.isEmpty, source.count <= 200 else { throw UsageError("must be 1 to 200 characters") }
            return source
        }
        static let maxRecordBytes = Option("max-record-bytes", default: 256 * 1024, in: 1...(64 << 20),
                                           help: "refuse lines longer than N bytes")
        static let maxLength = Option<Int?>("max-length", in: 1...(64 << 20),
                                            help: "cut conversations to N tokens from their oldest turns (default: no limit)")
    }

    /// The pairs the default pipeline's gate asks for (`eval.min_pairs`); a lineage's `min_held_out` may raise it.
    static var gateMinimum: Int { DataService.gateMinimum }

    /// "8 held-out pairs; the gate needs 10: import 2 more — until then no candidate can be promoted".
    static func readinessLine(_ readiness: GateReadiness) -> String {
        readiness.canBeJudged ? readiness.sentence
            : readiness.sentence + " (each example imported until then is held out); until then no candidate can be promoted"
    }

    static func describe(_ counts: ScrubCounts) -> String {
        guard counts.total > 0 else { return "nothing" }
        return counts.byKind.keys.sorted().map { "\(counts.byKind[$0]!) \($0)" }.joined(separator: ", ")
    }

    // MARK: list

    static let list = Command(
        "data list", summary: "list stored examples",
        options: [lineageFilter, split, .json]
    ) { invocation in
        let args = invocation.arguments
        let split = try args[split]
        let lineage = try args[lineageFilter]  // a bad name is a usage error (2) even where there is no state
        let store = try readingStore(invocation)
        let examples = try asUsage { try store.examples(lineage: lineage?.name, split: split) }
        if args[.json] {
            Console.print(JSON.pretty(JSONValue.array(examples.map(json))))
            return
        }
        var table = Table("ID", "LINEAGE", "SPLIT", "WEIGHT", "TOKENS", "USES", "SOURCE", "CREATED", "PROMPT → COMPLETION")
        for e in examples {
            table.append([String(e.id.prefix(12)), e.lineage, e.split.rawValue + (e.quarantinedAt == nil ? "" : "*"), format(e.weight),
                          "\(e.tokenCount)\(e.tokenCountExact ? "" : "~")", "\(e.uses)", e.source,
                          Timestamp.iso8601(e.createdAt),
                          (e.turns.map { "[\($0.count) turns] " } ?? "") + preview(e.prompt) + " → " + preview(e.completion)])
        }
        Console.print(table.render())
        Console.error("\(examples.count) example\(examples.count == 1 ? "" : "s") (~ = estimated token count"
                      + (examples.contains { $0.quarantinedAt != nil } ? "; train* = quarantined, never sampled until released)" : ")"))
    }

    static let split = Option<Split?>("split", value: "train|held_out", default: nil, help: "only this split") { text in
        guard let split = Split(rawValue: text) else {
            throw UsageError("must be one of \(Split.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
        }
        return split
    }

    /// The `data list --json` object: DESIGN.md's fields, then extra ones (`turns` only for a conversation of
    /// more than one exchange; `prompt` and `completion` are then its last user and assistant turns).
    static func json(_ e: Example) -> JSONValue {
        var fields: [String: JSONValue] = [
            "id": .string(e.id), "lineage": .string(e.lineage), "prompt": .string(e.prompt),
            "completion": .string(e.completion), "source": .string(e.source), "weight": .double(e.weight),
            "split": .string(e.split.rawValue), "created_at": .string(Timestamp.iso8601(e.createdAt)),
            "system": e.system.map(JSONValue.string) ?? .null, "token_count": .int(e.tokenCount),
            "token_count_exact": .bool(e.tokenCountExact), "expires_at": .string(Timestamp.iso8601(e.expiresAt)),
            "uses": .int(e.uses), "quarantined": .bool(e.quarantinedAt != nil),
            "quarantined_at": e.quarantinedAt.map { .string(Timestamp.iso8601($0)) } ?? .null,
            "quarantined_night": e.quarantinedNight.map(JSONValue.string) ?? .null,
        ]
        if let turns = e.turns {
            fields["turns"] = .array(turns.map { .object(["role": .string($0.role.rawValue), "content": .string($0.content)]) })
        }
        return .object(fields)
    }

    static func preview(_ text: String, limit: Int = 32) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > limit ? String(flat.prefix(limit - 1)) + "…" : flat
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(value)
    }

    // MARK: stats

    static let stats = Command(
        "data stats", summary: "counts per lineage: examples, splits, budget, expiry, scrubbed data",
        options: [lineageFilter, .json]
    ) { invocation in
        let args = invocation.arguments
        let lineage = try args[lineageFilter]?.name  // a bad name is a usage error (2) even where there is no state
        let store = try readingStore(invocation)
        let all = try asUsage { try store.stats(lineage: lineage) }
        if args[.json] {
            Console.print(JSON.pretty(JSONValue.array(all.map(json))))
            return
        }
        if all.isEmpty {
            Console.error(lineage.map { "no data or policy stored for lineage \($0); see 'adapt data stats'" }
                          ?? "no lineages stored; import examples with 'adapt data import'")
            return
        }
        var table = Table("LINEAGE", "EXAMPLES", "TRAIN", "HELD_OUT", "SPENT", "TOKENS", "NIGHTS", "NEXT EXPIRY", "SCRUBBED", "POLICY")
        for s in all {
            let p = s.policy
            table.append([s.lineage, "\(s.examples)", "\(s.train)", "\(s.heldOut)", "\(s.spent)",
                          "\(s.tokens)\(s.tokenCountsEstimated > 0 ? "~" : "")", "\(s.nightsSampled)",
                          s.nextExpiry.map(Timestamp.iso8601) ?? "-", describe(s.scrubbed),
                          "ttl \(p.ttlDays)d, \(p.maxUsesPerExample) uses, \(p.maxTokensPerNight) tok/night, "
                          + "held out \(format(p.heldOutFraction)) (min \(p.minHeldOut))"])
        }
        Console.print(table.render())
        for s in all { if let readiness = s.gateReadiness { Console.print("\(s.lineage): \(readinessLine(readiness))") } }
        for s in all where s.quarantined > 0 {
            Console.print("\(s.lineage): \(s.quarantined) training example\(s.quarantined == 1 ? "" : "s") quarantined after a worse night "
                          + "('adapt data list --lineage \(s.lineage) --json' marks them; 'adapt data release' lets a source back in)")
        }
    }

    static func json(_ s: LineageStats) -> JSONValue {
        func time(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp.iso8601($0)) } ?? .null }
        return .object([
            "lineage": .string(s.lineage), "examples": .int(s.examples), "train": .int(s.train),
            "held_out": .int(s.heldOut), "spent": .int(s.spent), "tokens": .int(s.tokens),
            "token_counts_estimated": .int(s.tokenCountsEstimated), "oldest_created_at": time(s.oldestCreatedAt),
            "newest_created_at": time(s.newestCreatedAt), "next_expiry": time(s.nextExpiry), "imports": .int(s.imports),
            "scrubbed": .object(s.scrubbed.byKind.mapValues(JSONValue.int)), "nights_sampled": .int(s.nightsSampled),
            "policy": policyJSON(s.policy),
            "gate_readiness": s.gateReadiness.map(readinessJSON) ?? .null,
            "quarantined": .int(s.quarantined),
        ])
    }

    /// `GateReadiness`'s fields, as `data import --json` encodes them.
    static func readinessJSON(_ r: GateReadiness) -> JSONValue {
        .object(["held_out": .int(r.heldOut), "min_pairs": .int(r.minPairs), "more_examples_needed": .int(r.moreExamplesNeeded),
                 "can_be_judged": .bool(r.canBeJudged), "sentence": .string(r.sentence)])
    }

    static func policyJSON(_ p: LineagePolicy) -> JSONValue {
        .object(["ttl_days": .int(p.ttlDays), "max_uses_per_example": .int(p.maxUsesPerExample),
                 "max_tokens_per_night": .int(p.maxTokensPerNight), "held_out_fraction": .double(p.heldOutFraction),
                 "min_held_out": .int(p.minHeldOut)])
    }

    // MARK: forget

    static let forget = Command(
        "data forget", summary: "erase examples by id or by source, with every copy of them (counted, not listed)",
        discussion: """
            Erases the examples and every snapshot blob that held a copy of them (the prune step's buffer snapshots,
            the sample step's training and held-out snapshots), in one operation: the rows are overwritten in the
            database file (SQLite secure_delete), the blob files deleted, and the write-ahead log checkpointed and
            truncated. On PostgreSQL (--database) the tables that held the rows are rewritten instead (VACUUM FULL),
            and erased blobs go from the database's blob tables. Runs that read an erased snapshot say so in
            'adapt show' and 'adapt replay'.
            Lists the adapter versions trained on a snapshot that held a forgotten example; --retire-adapters
            retires them in the same transaction (they stay registered but can never be made active again) and
            moves an active one to the newest version not retired that was once active, or to the base model; the
            lineage's active export (STATE/exports/L) is then rewritten for that version, or removed.
            A replay scratch kept with 'adapt replay RUN --scratch DIR' is removed when it holds a copy of an erased
            snapshot; one that is gone or replaced is named, since a moved copy cannot be reached. --json adds
            kept_replay_scratch [{path, run_id, action (removed, not_found, not_ours, not_removed), reason}] and
            active_exports [{lineage, active, serve, error}].
            """,
        options: [Forget.id, Forget.source, Forget.lineage, Forget.retireAdapters, .json]
    ) { invocation in
        let args = invocation.arguments
        let ids = try args.all(Forget.id).compactMap { $0 }
        let source = try args[Forget.source]
        let lineage = try args[Forget.lineage]
        guard ids.isEmpty != (source == nil) else {
            throw UsageError(ids.isEmpty ? "pass --id ID or --source S" : "pass either --id or --source, not both")
        }
        if !ids.isEmpty, lineage != nil { throw UsageError("--lineage goes with --source, not --id") }
        let store = try existingStore(invocation)
        let request = try asUsage { try store.forgetRequest(ids: ids, source: source, lineage: lineage) }
        let report = try store.forget(request, retireAdapters: args[Forget.retireAdapters])
        let forgotten = report.erasure.examples
        let retiredIDs = Set(report.retirement?.retired.map(\.id) ?? [])
        let versions = report.trainedOn.map { v -> JSONValue in
            .object(["lineage": .string(v.lineage.value), "version": .string(v.name),
                     "retired": .bool(v.isRetired || retiredIDs.contains(v.id)), "retired_now": .bool(retiredIDs.contains(v.id))])
        }
        let moves = (report.retirement?.moves ?? []).map { move -> JSONValue in
            .object(["lineage": .string(move.lineage.value), "from": move.from.map { .string($0.name) } ?? .null,
                     "to": move.to.map { .string($0.name) } ?? .null])
        }
        if args[.json] {
            Console.print(JSON.pretty(JSONValue.object([
                "forgotten": .int(forgotten), "erased_blobs": .int(report.erasure.blobs.count),
                "freed_bytes": .int(Int(report.erasure.freedBytes)), "wal_truncated": .bool(report.erasure.walTruncated),
                "tables_rewritten": .bool(report.erasure.tablesRewritten),
                "adapter_versions": .array(versions), "retired": .int(retiredIDs.count), "active_moves": .array(moves),
                "removed_replay_scratch": .int(report.removedReplayScratch),
                "kept_replay_scratch": .array(report.keptReplayScratch.map { kept in
                    .object(["path": .string(kept.path), "run_id": .string(kept.runID), "action": .string(kept.action.rawValue),
                             "reason": kept.reason.map { .string($0) } ?? .null])
                }),
                "active_exports": .array(report.activeExports.map { export in
                    .object(["lineage": .string(export.lineage), "active": export.active.map { .string($0) } ?? .null,
                             "serve": .array(export.lines.map { .string($0) }), "error": export.failure.map { .string($0) } ?? .null])
                }),
            ])))
            return
        }
        Console.print("forgot \(forgotten) example\(forgotten == 1 ? "" : "s")")
        let blobs = report.erasure.blobs.count
        if blobs > 0 {
            Console.print("erased \(blobs) snapshot blob\(blobs == 1 ? "" : "s") that held a copy (\(report.erasure.freedBytes) bytes)")
        }
        if report.removedReplayScratch > 0 {
            Console.print("removed \(report.removedReplayScratch) scratch directory(ies) left by killed replays")
        }
        for kept in report.keptReplayScratch {
            let path = TerminalText.escaped(kept.path)
            switch kept.action {
            case .removed:
                Console.print("removed the replay scratch kept at \(path) (\(kept.runID)): it held a copy of the erased text")
            case .notFound:
                Console.print("the replay scratch kept at \(path) (\(kept.runID)) is gone; if it was moved, its copy of the "
                              + "replay buffer may hold the erased text: delete it by hand")
            case .notOurs:
                Console.print("\(path), where the replay scratch of \(kept.runID) was kept, now holds something else and was left "
                              + "alone; if the scratch was moved, its copy of the replay buffer may hold the erased text: delete it by hand")
            case .notRemoved:
                Console.print("the replay scratch kept at \(path) (\(kept.runID)) holds a copy of the erased text and could not be "
                              + "removed (\(kept.reason ?? "unknown reason")): delete it by hand; the next 'data forget' tries again")
            }
        }
        if forgotten > 0, let leftover = store.leftover(of: report) { Console.print(leftover) }
        guard !report.trainedOn.isEmpty else { return }
        let names = report.trainedOn.map { "\($0.lineage)/\($0.name)" }.joined(separator: ", ")
        if report.retirement == nil {
            Console.print("adapter versions trained on them: \(names); pass --retire-adapters to retire them")
        } else {
            Console.print("retired \(retiredIDs.count) adapter version(s) trained on them (\(names))")
            for move in report.retirement?.moves ?? [] {
                Console.print("\(move.lineage): active adapter moved from \(move.from?.name ?? "base model") to \(move.to?.name ?? "the base model")")
            }
            for export in report.activeExports {
                if let failure = export.failure {
                    Console.print("\(export.lineage): the active export was not updated (\(TerminalText.escaped(failure))); 'adapt work' rewrites it when it starts")
                } else {
                    for line in export.lines { Console.print("\(export.lineage): \(line)") }
                }
            }
        }
    }

    /// The options of `data forget`. The lineage is checked by the store, after the state is opened, as before.
    enum Forget {
        static let id = Option<String?>("id", value: "ID", default: nil, repeats: true,
                                        help: "an example id or its first 8+ characters, as data list shows it (repeatable)") { $0 }
        static let source = Option<String?>("source", value: "S", help: "every example with this source")
        static let lineage = Option<String?>("lineage", value: "L", help: "with --source: only in this lineage")
        static let retireAdapters = Flag("retire-adapters", help: "retire the adapter versions trained on a forgotten example")
    }

    // MARK: policy

    static let policy = Command(
        "data policy", summary: "show or set a lineage's TTL, privacy budget and held-out split",
        discussion: """
            --max-uses: how many nights' training sets one example may join; then it is spent and never sampled again.
            --max-tokens-per-night: the most tokens one night's training set may hold.
            --ttl-days: training examples older than this are deleted by the prune step (moves the expiry of stored
            examples); held-out examples are kept, the held-out set only grows ('data forget' erases them).
            --held-out-fraction: share of new examples held out by the hash of their id (0–0.5; stored examples keep
            their split, and held-out examples never return to train). --min-held-out: the held-out floor.
            """,
        options: [lineage, Policy.ttl, Policy.uses, Policy.tokens, Policy.fraction, Policy.minimum, .json]
    ) { invocation in
        let args = invocation.arguments
        let lineage = try args.required(lineage)
        let ttl = try args[Policy.ttl], uses = try args[Policy.uses], tokens = try args[Policy.tokens]
        let fraction = try args[Policy.fraction], minimum = try args[Policy.minimum]
        let changing = [ttl, uses, tokens, minimum].contains { $0 != nil } || fraction != nil
        func apply(_ p: inout LineagePolicy) {
            if let ttl { p.ttlDays = ttl }
            if let uses { p.maxUsesPerExample = uses }
            if let tokens { p.maxTokensPerNight = tokens }
            if let fraction { p.heldOutFraction = fraction }
            if let minimum { p.minHeldOut = minimum }
        }
        // The name and each given value are checked before a state is opened (each range stands alone, so the
        // defaults with the given values applied fail exactly when the stored policy would): a refused change
        // creates nothing. Showing a policy only reads.
        _ = try Lineage.option(lineage)
        var given = LineagePolicy.defaults
        apply(&given)
        try asUsage { try given.validate() }
        let store = try changing ? store(invocation) : readingStore(invocation)
        let result = try asUsage {
            guard changing else { return try store.policy(lineage: lineage) }
            return try store.setPolicy(lineage: lineage, apply)
        }
        if args[.json] {
            guard case var .object(fields) = policyJSON(result) else { return }
            fields["lineage"] = .string(lineage)
            Console.print(JSON.pretty(JSONValue.object(fields)))
        } else {
            Console.print("\(lineage): ttl \(result.ttlDays) days, \(result.maxUsesPerExample) uses per example, "
                          + "\(result.maxTokensPerNight) tokens per night, held out \(format(result.heldOutFraction)) "
                          + "(at least \(result.minHeldOut))")
        }
    }

    /// The options of `data policy`: given ones change the stored policy (whose ranges the store checks);
    /// the defaults shown are a new lineage's.
    enum Policy {
        static let ttl = Option<Int?>("ttl-days", help: "days a training example is kept (default \(LineagePolicy.defaults.ttlDays))")
        static let uses = Option<Int?>("max-uses", help: "training runs one example may join (default \(LineagePolicy.defaults.maxUsesPerExample))")
        static let tokens = Option<Int?>("max-tokens-per-night",
                                         help: "tokens one night may train on (default \(LineagePolicy.defaults.maxTokensPerNight))")
        static let fraction = Option<Double?>("held-out-fraction", value: "F",
                                              help: "share of new examples held out (default \(LineagePolicy.defaults.heldOutFraction))")
        static let minimum = Option<Int?>("min-held-out", help: "held-out minimum: new examples are held out first until the lineage "
                                          + "holds N (default \(LineagePolicy.defaults.minHeldOut))")
    }
}
