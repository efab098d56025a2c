import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt registry …`: adapter versions, the active pointer per lineage, promotion, rollback, verification.
enum RegistryCommands {
    static let all: [Command] = [list, show, add, RegistryExchangeCommands.export, promote, rollback, history, verify] + shortcuts

    /// `adapt promote [--force]` and `adapt rollback`, the names DESIGN.md gives people: the same commands.
    static let shortcuts: [Command] = [promote, rollback].map { command in
        Command(command.path.dropFirst().joined(separator: " "), summary: command.summary, discussion: command.discussion,
                options: command.options, positionals: command.positionals, run: command.run)
    }

    /// `--lineage L` of the commands that read what is registered: the identifier rule, looser than
    /// `Lineage.rule` (it allows '.'), so that lineages registered under it stay reachable. `registry add`
    /// names a new lineage with `Add.lineage` instead.
    static let lineage = Option<ShortIdentifier?>("lineage", value: "L", default: nil, help: "the lineage (e.g. mail)") { text in
        guard let id = ShortIdentifier(text) else { throw UsageError("must be 1 to 64 letters, digits, '.', '_' or '-'") }
        return id
    }
    static let force = Flag("force", help: "promote without the engine's 'better' gate report (recorded)")

    /// The registry of `--database postgres://…` (or `ADAPT_DATABASE`) with its blobs in that database, else
    /// of the state directory (created on first use).
    static func registry(_ invocation: Invocation) throws -> AdapterRegistry {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try RegistryService.open(postgres: url) }
        let state = try GlobalOptions.stateDirectory(invocation)
        return try RegistryService.open(try GlobalOptions.database(invocation), blobs: state.blobs)
    }

    /// The registry of a command that only judges or moves what is registered (`eval`, `promote`, `rollback`): on PostgreSQL, or the
    /// state directory's, which must exist (a mistyped --state is refused, not made into a new state).
    static func existingRegistry(_ invocation: Invocation) throws -> AdapterRegistry {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try RegistryService.open(postgres: url) }
        let state = try GlobalOptions.stateDirectory(invocation)
        return try RegistryService.open(try GlobalOptions.existingDatabase(invocation), blobs: state.blobs)
    }

    /// The registry of a command that only reads: on PostgreSQL, or the state directory's read-only (an error
    /// if the state does not exist).
    static func readingRegistry(_ invocation: Invocation) throws -> AdapterRegistry {
        if let url = try GlobalOptions.postgresDatabase(invocation) { return try RegistryService.open(postgres: url) }
        let state = try GlobalOptions.stateDirectory(invocation)
        return try RegistryService.open(try GlobalOptions.readOnlyDatabase(invocation), blobs: state.blobs)
    }

    /// `VERSION` is `vN` or `LINEAGE/vN`; `--lineage` fills in a bare `vN`.
    static func reference(_ invocation: Invocation) throws -> VersionReference {
        let text = try invocation.arguments.required("VERSION")
        let parsed: VersionReference
        do { parsed = try VersionReference(parsing: text) } catch { throw UsageError("\(error)") }
        let option = try invocation.arguments[lineage]
        if let option, let given = parsed.lineage, option != given {
            throw UsageError("VERSION names lineage \(given) but --lineage says \(option)")
        }
        return VersionReference(lineage: parsed.lineage ?? option, number: parsed.number)
    }

    // MARK: JSON shapes (DESIGN.md: `registry list` prints {version, lineage, digest, active, created_at, metrics})

    struct VersionJSON: Encodable {
        let version: String
        let lineage: String
        let digest: String
        let active: Bool
        let created_at: String
        let metrics: VersionMetrics
        let parent: String?
        /// The weights parent: the version this one's training started from; null when trained from zero.
        let trained_from: NullableName
        let size: Int
        let metadata: AdapterMetadata?
        /// Retired versions (trained on erased examples) cannot be made active again.
        let retired: Bool
        let retired_at: String?
        /// For an imported adapter: the weights digest an export of the same weights reports.
        var weights_digest: String?
        /// Its adapter file was deleted by `registry prune` (the row stays); it cannot be made active.
        var pruned = false

        init(_ v: AdapterVersion, active: Bool, parent: AdapterVersion?, trainedFrom: AdapterVersion? = nil, full: Bool) {
            version = v.name
            lineage = v.lineage.value
            digest = v.adapterDigest.hex
            self.active = active
            created_at = Timestamp.iso8601(v.createdAt)
            metrics = v.metrics
            self.parent = parent?.name
            trained_from = NullableName(trainedFrom?.name)
            size = v.size
            metadata = full ? v.metadata : nil
            retired = v.isRetired
            retired_at = v.retiredAt.map(Timestamp.iso8601)
        }
    }

    /// A version name written as an explicit null when there is none, so the field is always in the listing.
    struct NullableName: Encodable {
        let name: String?
        init(_ name: String?) { self.name = name }
        func encode(to encoder: Encoder) throws {
            var c = encoder.singleValueContainer()
            if let name { try c.encode(name) } else { try c.encodeNil() }
        }
    }

    struct MoveJSON: Encodable {
        let lineage: String
        let from: String?
        let to: String?
        let reason: String
        let bypassed: String?
        let actor: String
        let at: String
        let changed: Bool

        enum CodingKeys: String, CodingKey { case lineage, from, to, reason, bypassed, actor, at, changed }

        // `from`/`to` are null for the base model: written out so the shape never changes.
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lineage, forKey: .lineage)
            try c.encode(from, forKey: .from)
            try c.encode(to, forKey: .to)
            try c.encode(reason, forKey: .reason)
            try c.encode(bypassed, forKey: .bypassed)
            try c.encode(actor, forKey: .actor)
            try c.encode(at, forKey: .at)
            try c.encode(changed, forKey: .changed)
        }
    }

    static func moveJSON(_ change: AdapterRegistry.PointerChange) -> MoveJSON {
        MoveJSON(lineage: change.lineage.value, from: change.from?.name, to: change.to?.name,
                 reason: change.move?.reason.rawValue ?? "none", bypassed: change.bypassed,
                 actor: change.move?.actor.value ?? "-", at: change.move.map { Timestamp.iso8601($0.at) } ?? "-",
                 changed: change.move != nil)
    }

    // MARK: Commands

    static let list = Command(
        "registry list", summary: "list adapter versions and which one is active per lineage",
        options: [lineage, .json]
    ) { invocation in
        let registry = try readingRegistry(invocation)
        let entries = try RegistryService.list(registry, lineage: try invocation.arguments[lineage])
        let pruned = try RegistryService.prunedIDs(registry)
        let rows = entries.map { entry in
            var row = VersionJSON(entry.version, active: entry.isActive, parent: entry.parent, trainedFrom: entry.trainedFrom, full: false)
            row.pruned = pruned.contains(entry.version.id)
            return row
        }
        if invocation.arguments[.json] { Console.print(JSON.pretty(rows)); return }
        if rows.isEmpty { Console.error("no adapter versions registered"); return }
        var table = Table("LINEAGE", "VERSION", "ACTIVE", "DIGEST", "GATE", "CREATED")
        for (row, v) in zip(rows, entries.map(\.version)) {
            let marks = [row.retired ? "retired" : nil, row.pruned ? "pruned" : nil].compactMap { $0 }.joined(separator: ", ")
            table.append([row.lineage, row.version, row.active ? "*" : marks, v.adapterDigest.short,
                          v.metrics.gate?.outcome.rawValue ?? "-", row.created_at])
        }
        Console.print(table.render())
    }

    static let show = Command(
        "registry show", summary: "show one adapter version: digest, parent, metadata, metrics",
        options: [lineage, .json], positionals: [PositionalSpec("VERSION", help: "vN or LINEAGE/vN")]
    ) { invocation in
        let registry = try readingRegistry(invocation)
        let entry = try RegistryService.show(try reference(invocation), in: registry)
        let version = entry.version
        var json = VersionJSON(version, active: entry.isActive, parent: entry.parent, trainedFrom: entry.trainedFrom, full: true)
        json.pruned = try RegistryService.prunedIDs(registry).contains(version.id)
        if invocation.arguments[.json] { Console.print(JSON.pretty(json)); return }
        Console.print("""
            \(json.lineage)/\(json.version)\(json.active ? " (active)" : "")\(json.pruned ? " (pruned: its file was deleted)" : "")
            digest     \(json.digest)
            size       \(json.size) bytes
            parent     \(json.parent ?? "-")
            trained    from \(json.trained_from.name ?? "zero")
            created    \(json.created_at)
            metadata   \(JSON.canonicalString(version.metadata))
            metrics    \(JSON.canonicalString(version.metrics))
            """)
    }

    static let add = Command(
        "registry add", summary: "register an adapter file as the next version of a lineage (not activated)",
        discussion: """
            The file must be an adapt adapter (as 'adapt train' writes it); it is copied into the \
            content-addressed blob store. A new version is not promotable until the engine has scored it on the \
            lineage's held-out set: run 'adapt eval --lineage L --version N'. Metadata holds only numbers, \
            digests and identifiers.
            """,
        options: [Add.lineage, Add.parent, Add.baseModel, Add.chatConvention, .json]
            + RegistryExchangeCommands.importOptions,
        positionals: [PositionalSpec("FILE", optional: true, help: "the adapter file (or one of the --from-… options)")]
    ) { invocation in
        let args = invocation.arguments
        // A new version's lineage follows the rule of every other command that names one ('.' is refused), so
        // the pipeline can later find it; existing lineages stay reachable through the looser identifier rule.
        let lineage = ShortIdentifier(try args.required(Add.lineage))
        let source: RegistryService.Addition.Source
        if let given = try RegistryExchangeCommands.source(invocation) {
            let (format, path) = given
            if args.string("FILE") != nil { throw UsageError("pass FILE or a --from-… option, not both") }
            guard !path.isEmpty else { throw UsageError("an empty path names no adapter; pass its file or directory") }
            source = .imported(format, path: path, model: try RegistryExchangeCommands.modelURL(invocation),
                               chatFormat: try args[ModelCommands.chatFormat])
        } else {
            source = .file(path: try nonEmptyPath(try args.required("FILE")))
        }
        let addition = RegistryService.Addition(
            lineage: lineage, source: source, parent: try args[Add.parent], baseModel: try args[Add.baseModel],
            chatConvention: try args[Add.chatConvention])
        let added = try RegistryService.add(addition) { try registry(invocation) }
        let version = added.version
        if args[.json] {
            var json = VersionJSON(version, active: false, parent: nil, full: true)
            json.weights_digest = added.importedWeights?.hex
            Console.print(JSON.pretty(json))
        } else {
            Console.print("registered \(version.lineage)/\(version.name) (\(version.adapterDigest.short), \(version.size) bytes)")
        }
    }

    /// The options of `registry add` besides the `--from-…` sources.
    enum Add {
        /// A new version's lineage follows `Lineage.rule`, as every command that names a new one.
        static let lineage = Option<Lineage?>(lineage: "the lineage (e.g. mail)")
        static let parent = Option<VersionReference?>("parent", value: "vN", default: nil,
                                                      help: "the version this one was trained from") { text in
            try VersionReference(parsing: text)
        }
        static let baseModel = Option<Digest?>("base-model", value: "DIGEST", default: nil,
                                               help: "SHA-256 of the base model file") { text in
            guard let digest = Digest(hex: text) else { throw UsageError("expects a 64-digit SHA-256") }
            return digest
        }
        static let chatConvention = Option<ShortIdentifier?>("chat-convention", value: "NAME", default: nil,
                                                             help: "chat formatting convention used in training (e.g. chatml)") { text in
            guard let id = ShortIdentifier(text) else { throw UsageError("must be a short identifier") }
            return id
        }
    }

    /// `path`, unless it is empty: an empty argument names no file.
    static func nonEmptyPath(_ path: String) throws -> String {
        guard !path.isEmpty else { throw UsageError("an empty path names no file; pass the file's path") }
        return path
    }

    static let promote = Command(
        "registry promote", summary: "make a version the active adapter of its lineage (a pointer flip)",
        discussion: """
            Refuses unless the engine's own gate report for the version ('adapt eval --lineage L --version N', \
            or the nightly eval step) says 'better', is about its adapter digest, was made on the lineage's \
            current held-out set and against the version active now. --force promotes anyway, says what it \
            bypassed, and records 'force' in the history. The adapter file is verified first.
            """,
        options: [lineage, force, .json],
        positionals: [PositionalSpec("VERSION", help: "vN or LINEAGE/vN")]
    ) { invocation in
        let registry = try existingRegistry(invocation)
        let force = invocation.arguments[RegistryCommands.force]
        let state = try GlobalOptions.hostState(invocation)
        let moved = try RegistryService.promote(try reference(invocation), force: force, registry: registry,
                                                model: state.defaultModel, state: state)
        let change = moved.change
        if let bypassed = change.bypassed { Console.error("adapt: --force bypassed: \(bypassed); recorded in the history") }
        report(moved)
        if invocation.arguments[.json] { Console.print(JSON.pretty(moveJSON(change))); return }
        if change.move == nil {
            Console.print("\(change.lineage)/\(change.to?.name ?? "base") is already active")
        } else {
            Console.print("\(change.lineage): \(change.from?.name ?? "base") → \(change.to?.name ?? "base")")
        }
    }

    static let rollback = Command(
        "registry rollback", summary: "point a lineage back to the version active before the current one (or the base model)",
        options: [lineage, .json]
    ) { invocation in
        let lineage = try invocation.arguments.required(RegistryCommands.lineage)
        let state = try GlobalOptions.hostState(invocation)
        let moved = try RegistryService.rollback(lineage: lineage, registry: try existingRegistry(invocation), model: state.defaultModel,
                                                 state: state)
        let change = moved.change
        report(moved)
        if invocation.arguments[.json] { Console.print(JSON.pretty(moveJSON(change))); return }
        Console.print("\(lineage): \(change.from?.name ?? "base") → \(change.to?.name ?? "base")")
    }

    /// How to serve the rewritten active export, or why it was not rewritten (the move itself is committed).
    static func report(_ moved: RegistryService.PointerResult) {
        for line in moved.exportNotes { Console.error("adapt: \(line)") }
        if let failure = moved.exportFailure {
            Console.error("adapt: the active export of \(moved.change.lineage) was not updated: \(TerminalText.escaped(failure))")
        }
    }

    static let history = Command(
        "registry history", summary: "list every move of the active pointer, oldest first",
        options: [lineage, .json]
    ) { invocation in
        let moves = try RegistryService.history(try readingRegistry(invocation), lineage: try invocation.arguments[lineage])
        let rows = moves.map { named in
            let m = named.move
            return MoveJSON(lineage: m.lineage.value, from: named.from, to: named.to, reason: m.reason.rawValue, bypassed: m.bypassed,
                            actor: m.actor.value, at: Timestamp.iso8601(m.at), changed: true)
        }
        if invocation.arguments[.json] { Console.print(JSON.pretty(rows)); return }
        var table = Table("AT", "LINEAGE", "FROM", "TO", "REASON", "BY", "BYPASSED")
        for r in rows { table.append([r.at, r.lineage, r.from ?? "base", r.to ?? "base", r.reason, r.actor, r.bypassed ?? ""]) }
        Console.print(table.render())
    }

    struct VerificationJSON: Encodable {
        let version: String
        let lineage: String
        let digest: String
        let state: String
    }

    static let verify = Command(
        "registry verify", summary: "rehash every adapter file; exit 1 if any is missing or corrupt",
        options: [lineage, .json]
    ) { invocation in
        let results = try RegistryService.verify(try readingRegistry(invocation), lineage: try invocation.arguments[lineage])
        let rows = results.map {
            VerificationJSON(version: $0.version.name, lineage: $0.version.lineage.value, digest: $0.version.adapterDigest.hex, state: $0.state.rawValue)
        }
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(rows))
        } else {
            var table = Table("LINEAGE", "VERSION", "DIGEST", "STATE")
            for r in rows { table.append([r.lineage, r.version, String(r.digest.prefix(12)), r.state]) }
            Console.print(table.render())
        }
        // A pruned version's file was deleted on purpose: listed as `pruned`, not a failure.
        let bad = results.filter { $0.state != .ok && $0.state != .pruned }
        if !bad.isEmpty {
            Console.error("adapt: \(bad.count) of \(results.count) adapter files failed verification; restore them from a backup or re-run the train step")
            throw ExitCode.failure
        }
    }
}
